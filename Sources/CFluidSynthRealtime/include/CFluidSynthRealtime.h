#ifndef SPINET_CFLUIDSYNTHREALTIME_H
#define SPINET_CFLUIDSYNTHREALTIME_H

/// Number of one-thread OpenMP parallel regions run inline since start
/// (FluidSynth renders inside one per call when built with OpenMP).
unsigned long spinet_inline_parallel_regions(void);

/// Initialises libinstpatch (a libfluidsynth dependency) once for the whole
/// process and keeps it so, so that creating and deleting synths one after
/// the other does not initialise it again each time (which leaks). Call
/// before creating a synth; later calls do nothing (instpatch_hold.c).
void spinet_hold_instpatch(void);

#endif
