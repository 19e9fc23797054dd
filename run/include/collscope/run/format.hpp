#pragma once
// The one way collscope writes sizes, durations and bandwidths for people: reports, findings, the viewer, the
// tuner. Machine formats (JSON) keep raw numbers with the unit in the key.
#include <cstdint>
#include <string>
#include <string_view>

namespace collscope::run {

// Binary units with 3 significant digits: "400 B", "64 KiB", "1.5 MiB", "2 GiB". Exact sizes, never buckets.
std::string format_bytes(double bytes);
// "830 ns", "12.3 µs", "1.25 ms", "2.5 s" (3 significant digits, sign kept).
std::string format_duration(double ns);
// Milliseconds with two decimals, for tables whose columns must line up: "12.34 ms".
std::string format_ms(double ns);
// Gigabytes per second (10^9 bytes/s, the nccl-tests unit) with 3 significant digits: "12.3 GB/s", "0.0412 GB/s".
std::string format_bandwidth(double gbps);

// Text for a terminal: `text` wrapped at spaces so that no line is wider than `width` columns (UTF-8 code points),
// lines after the first indented by `indent` spaces; a word longer than a line is cut. Newlines in `text` are
// kept (the next line is indented too). No trailing newline is added.
std::string wrap_text(std::string_view text, std::size_t width = 100, std::size_t indent = 0);

}  // namespace collscope::run
