#pragma once
// OTF2 reports its errors through a process-wide callback (by default it prints them itself). The OTF2 export and
// import install this one: it keeps the last message for the one line the command fails with, and prints nothing.
#include <otf2/otf2.h>

#include <cstdarg>
#include <cstdio>
#include <string>

namespace collscope::formats::detail {

inline thread_local std::string otf2_last_error;

inline OTF2_ErrorCode keep_otf2_error(void*, const char*, uint64_t, const char*, OTF2_ErrorCode code,
                                      const char* format, va_list va) {
  char text[512];
  std::vsnprintf(text, sizeof text, format, va);
  otf2_last_error = text;
  return code;
}

// The last message OTF2 gave, else its description of `code`.
inline std::string otf2_error_text(OTF2_ErrorCode code) {
  return otf2_last_error.empty() ? std::string(OTF2_Error_GetDescription(code)) : otf2_last_error;
}

}  // namespace collscope::formats::detail
