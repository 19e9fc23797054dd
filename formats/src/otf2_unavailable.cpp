// Built when the OTF2 library was not found at configure time: `export --format otf2` and `import` of an OTF2
// archive say so in one line (exit 2).
#include <collscope/formats/otf2.hpp>
#include <collscope/store/error.hpp>

namespace collscope::formats {

bool otf2_available() { return false; }

Otf2ExportCounts export_otf2(const std::string& run_dir, const std::string&) {
  throw InputError(run_dir + ": this collscope was built without the OTF2 library (Debian: libopen-trace-format2-dev, "
                   "scripts/install-deps.sh), so it cannot write OTF2; --format chrome can");
}

Otf2ImportCounts import_otf2(const std::string& anchor, const std::string&) {
  throw InputError(anchor + ": this collscope was built without the OTF2 library (Debian: libopen-trace-format2-dev, "
                   "scripts/install-deps.sh), so it cannot read OTF2");
}

bool looks_like_otf2_archive(const std::string& path) { return path.ends_with(".otf2"); }

}  // namespace collscope::formats
