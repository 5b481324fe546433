// Keeps FluidSynth's render path free of allocation when libfluidsynth is
// built with OpenMP (as Debian's is).
//
// With synth.cpu-cores = 1, every fluid_synth_write_float() opens
// `#pragma omp parallel num_threads(1)`. libgomp builds a team for it and,
// for a one-thread team, mallocs it on entry and frees it on exit: one
// allocation per render call, on the render thread.
//
// A one-thread region means "run the body once on this thread". Outside a
// team, libgomp already runs the constructs FluidSynth uses inside the
// region serially: `single` is taken by the caller, `task` runs at once,
// `barrier` returns. So this definition of GOMP_parallel, which the dynamic
// linker prefers over libgomp's because it lives in the executable, runs
// one-thread regions inline and forwards every other region to libgomp.
//
// Process-wide by nature, and safe to share: it keeps no state but a
// counter, and it changes nothing for regions of more than one thread, so
// every engine in the process (several offline workers, several plugin
// instances) is served alike. It takes effect only where the dynamic
// linker finds it before libgomp: in an executable linked with
// --export-dynamic-symbol=GOMP_parallel (spinet, spinet-rtcheck, the test
// binaries). A shared object loaded by a host with RTLD_LOCAL (an LV2 or
// CLAP plugin) is searched after the global scope, so there it depends on
// whether the host already loaded libgomp; `spinet_inline_parallel_regions`
// tells whether it took effect.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdatomic.h>
#include <stddef.h>
#include "CFluidSynthRealtime.h"

typedef void (*gomp_parallel_fn)(void (*)(void *), void *, unsigned, unsigned);

static atomic_ulong inline_regions;

unsigned long spinet_inline_parallel_regions(void) {
    return atomic_load_explicit(&inline_regions, memory_order_relaxed);
}

__attribute__((visibility("default"), used))
void GOMP_parallel(void (*fn)(void *), void *data, unsigned num_threads, unsigned flags) {
    if (num_threads == 1) {
        atomic_fetch_add_explicit(&inline_regions, 1, memory_order_relaxed);
        fn(data);
        return;
    }
    static gomp_parallel_fn next;
    if (next == NULL) {
        next = (gomp_parallel_fn)dlvsym(RTLD_NEXT, "GOMP_parallel", "GOMP_4.0");
        if (next == NULL) next = (gomp_parallel_fn)dlsym(RTLD_NEXT, "GOMP_parallel");
    }
    if (next != NULL) {
        next(fn, data, num_threads, flags);
    } else {
        fn(data);   // no libgomp: the region runs serially
    }
}
