/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The objects <membarrier.h> reads inline, defined in the one file that
 * does not include it.  The header declares them const, which tells
 * compilers that nothing stores to them, so that a function reads them
 * once (a compiler barrier does not make it read a const object again).
 * That holds in every way that matters: the library stores to each only
 * here, from its constructor (tests aside), once, and a reader that kept
 * the value from before gets what is correct anyway: 1 for the light
 * flag (a fence, which pairs with any heavy barrier), 0 for the QUERY
 * answer (not valid: membarrier() is called).  The objects themselves are
 * not const (they live in writable data), so the stores are defined;
 * only this file sees them writable.
 */
#include "config.h"

/* Starts at 1: until a real heavy mechanism is known, light is a fence. */
__attribute__((visibility("default"))) int libmembarrier_light_fence = 1;

/* QUERY's answer with bit 31 set, once known; 0 until then (state.c). */
__attribute__((visibility("default"))) unsigned int libmembarrier_query_answer;

void lmb_light_flag_store(int fence);
void lmb_query_answer_store(unsigned int answer);

void lmb_light_flag_store(int fence)
{
	__atomic_store_n(&libmembarrier_light_fence, fence, __ATOMIC_RELEASE);
}

void lmb_query_answer_store(unsigned int answer)
{
	__atomic_store_n(&libmembarrier_query_answer, answer, __ATOMIC_RELAXED);
}
