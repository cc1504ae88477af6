/* simt.h - warp-level helpers for code shared by the GPU and the host.
 *
 * On the GPU a warp of 32 lanes runs each metric and each rule; on the host
 * the same code runs as one lane.  Code written with these helpers is
 * correct for both: loops stride by simt_nlanes() from simt_lane(), results
 * are combined with the reductions.  Every lane of the warp must call a
 * reduction (they synchronise the warp).  Freestanding.
 */
#ifndef SENTINEL_SIMT_H
#define SENTINEL_SIMT_H

#include <stdint.h>

unsigned simt_lane(void);
void simt_sync(void);                   /* __syncwarp(): memory written before is visible after */
unsigned simt_nlanes(void);
uint64_t simt_sum_u64(uint64_t v);      /* every lane gets the warp's sum */
uint64_t simt_shfl_u64(uint64_t v, unsigned src);  /* lane src's v (each lane its own src) */
int simt_any(int v);                    /* every lane gets the warp's OR */
int simt_all(int v);                    /* every lane gets the warp's AND */
uint32_t simt_ballot(int v);            /* bit l: lane l's v (every lane the same) */
double simt_sum_f64(double v);
double simt_min_f64(double v);          /* NaN-ignoring; NaN only if every lane is NaN */
double simt_max_f64(double v);

#endif
