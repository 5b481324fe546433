// The CLAP headers (include/clap, MIT, see VERSION.md) are header-only; this
// translation unit exists because a SwiftPM C target needs a source file. It
// also checks that the vendored headers compile as C.
#include "clap/clap.h"
