#pragma once
// Writing a command's output file (an export, a rules table): whole or not at all, without ever replacing what is
// not a regular file.
#include <functional>
#include <ostream>
#include <string>

namespace collscope::store {

// Writes `path` through `write`. A regular file, or a name that does not exist yet, is written beside it as
// PATH.partial and renamed over it at the end, so a failed write never leaves half a file under the name asked
// for. Anything else (/dev/stdout, /dev/null, a FIFO, a terminal) is written in place: renaming over it would
// replace the device with a regular file. Throws InputError naming `path` when it cannot be written; whatever
// `write` throws is rethrown once the partial file is removed.
void write_output_file(const std::string& path, const std::function<void(std::ostream&)>& write);

}  // namespace collscope::store
