/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * bench/light's loops with LIBMEMBARRIER_LIGHT_COMPILER_BARRIER: the same
 * critical section, with membarrier_light() exactly a compiler barrier
 * (and this translation unit's start-up check, membarrier(3)), beside the
 * compiler-barrier loops again: the opted-in loops are compared with
 * those of their own translation unit, whose data and code the compiler
 * laid out alike.
 */
#define LIBMEMBARRIER_LIGHT_COMPILER_BARRIER 1
#include "membarrier.h"
#include "light.h"

unsigned long loop_optin_barrier(unsigned long n)
{
	unsigned long bad = 0;

	for (unsigned long i = 0; i < n; i++)
		READ_ONE(COMPILER_BARRIER(), bad);
	return bad;
}

NOINLINE static unsigned long read_optin_barrier(void)
{
	unsigned long bad = 0;

	READ_ONE(COMPILER_BARRIER(), bad);
	return bad;
}

unsigned long loop_call_optin_barrier(unsigned long n)
{
	unsigned long bad = 0;

	for (unsigned long i = 0; i < n; i++)
		bad += read_optin_barrier();
	return bad;
}

unsigned long loop_optin(unsigned long n)
{
	unsigned long bad = 0;

	for (unsigned long i = 0; i < n; i++)
		READ_ONE(membarrier_light(), bad);
	return bad;
}

NOINLINE unsigned long read_optin(void)
{
	unsigned long bad = 0;

	READ_ONE(membarrier_light(), bad);
	return bad;
}

unsigned long loop_call_optin(unsigned long n)
{
	unsigned long bad = 0;

	for (unsigned long i = 0; i < n; i++)
		bad += read_optin();
	return bad;
}
