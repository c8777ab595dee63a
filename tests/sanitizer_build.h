// Whether this test driver is built with a sanitizer (GCC and Clang define these under
// -fsanitize=address and -fsanitize=thread). A claim about learning (a model learns, a recipe
// learns worse) needs hundreds of steps on several seeds, which a sanitizer runs 5-20 times
// slower, while what a sanitizer looks for (a bad access, an undefined operation, a race) shows
// in any step. Such a test runs a few steps there, checking what a few steps can, and leaves the
// claim to the plain build, which makes it on every CI run (as the engine parity's sanitizer set
// does, tests/engine/engine_parity.h).
#pragma once

namespace plab::test {

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
inline constexpr bool kSanitizerBuild = true;
#else
inline constexpr bool kSanitizerBuild = false;
#endif

} // namespace plab::test
