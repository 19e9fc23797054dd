#pragma once
// Whether this test program is a checking build's (scripts/sanitize.sh: ASan+UBSan or TSan). Their instrumentation
// makes code several times slower and its timing uneven, so tests that also assert time (a bound in seconds, a
// duration matching a program's own clock) widen or skip those assertions there; the plain build asserts them.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
inline constexpr bool kSanitizedBuild = true;
#else
inline constexpr bool kSanitizedBuild = false;
#endif
