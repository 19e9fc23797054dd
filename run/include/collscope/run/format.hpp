#pragma once
// The one way collscope writes sizes, durations and bandwidths for people: reports, findings, the viewer, the
// tuner. Machine formats (JSON) keep raw numbers with the unit in the key.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace collscope::run {

// Binary units with 3 significant digits: "400 B", "64 KiB", "1.5 MiB", "2 GiB". Exact sizes, never buckets.
std::string format_bytes(double bytes);
// The sizes a group of collectives had: "400 B", or "264 KiB–330 KiB" (the smallest and largest seen, never a
// bucket's bounds).
std::string format_size_range(std::int64_t lo, std::int64_t hi);
// "830 ns", "12.3 µs", "1.25 ms", "2.5 s" (3 significant digits, sign kept).
std::string format_duration(double ns);
// Milliseconds with two decimals, for tables whose columns must line up: "12.34 ms".
std::string format_ms(double ns);
// Gigabytes per second (10^9 bytes/s, the nccl-tests unit) with 3 significant digits: "12.3 GB/s", "0.0412 GB/s".
std::string format_bandwidth(double gbps);

// Names in a run are the job's bytes, not always UTF-8 (the kernel cuts thread names at 15 bytes, mid-character;
// Latin-1 directory and tensor names). Every writer of a text format (JSON, XML, HTML, Markdown, the Chrome trace)
// and the Horovod reader repair them one way: each ill-formed sequence becomes U+FFFD, Unicode's "maximal subpart"
// practice.
inline constexpr std::string_view kReplacementCharacter = "\xEF\xBF\xBD";
// Length of the well-formed UTF-8 sequence at s[at] (1 to 4; Unicode table 3-7: no overlongs, no surrogates, nothing
// above U+10FFFF), or 0 when ill-formed: then `bad` is the length of its maximal well-formed prefix (at least 1),
// the bytes one U+FFFD replaces, and `incomplete` says whether only the end of `s` cut it short (a reader of chunks
// waits for the next one).
std::size_t utf8_sequence(std::string_view s, std::size_t at, std::size_t& bad, bool* incomplete = nullptr);
// `s` with each ill-formed UTF-8 sequence replaced by U+FFFD.
std::string valid_utf8(std::string_view s);
// Text for a terminal: `text` wrapped at spaces so that no line is wider than `width` columns (UTF-8 code points),
// lines after the first indented by `indent` spaces; a word longer than a line is cut. Newlines in `text` are
// kept (the next line is indented too). No trailing newline is added.
std::string wrap_text(std::string_view text, std::size_t width = 100, std::size_t indent = 0);

}  // namespace collscope::run
