// Built when the OTF2 library was not found at configure time: `--format otf2` says so in one line (exit 2).
#include <collscope/formats/otf2.hpp>
#include <collscope/store/error.hpp>

namespace collscope::formats {

bool otf2_available() { return false; }

Otf2ExportCounts export_otf2(const std::string& run_dir, const std::string&) {
  throw InputError(run_dir + ": this collscope was built without the OTF2 library (Debian: libopen-trace-format2-dev, "
                   "scripts/install-deps.sh), so it cannot write OTF2; --format chrome can");
}

}  // namespace collscope::formats
