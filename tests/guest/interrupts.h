/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The function call IPI row of /proc/interrupts, shared by the guest tests (mbtool.c)
 * and the benchmarks (bench/bench.h).
 */
#ifndef LMB_GUEST_INTERRUPTS_H
#define LMB_GUEST_INTERRUPTS_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*
 * The row of the IPIs of smp_call_function*(), which membarrier's
 * expedited commands and TLB shootdowns send: "CAL" on x86, "IPI1"
 * (IPI_CALL_FUNC, "Function call interrupts") on arm64.
 */
#if defined(__aarch64__)
# define LMB_CALL_ROW "IPI1:"
#else
# define LMB_CALL_ROW "CAL:"
#endif

/*
 * Per-CPU counts of that row (named CAL below, whatever the architecture)
 * for CPUs 0..ncpu-1.  Returns 0, or -1 when there is no such row.
 */
static inline int read_cal_row(long long *cal, int ncpu)
{
	char line[4096];
	FILE *f = fopen("/proc/interrupts", "r");
	int found = 0;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		char *p = line, *end;

		while (*p == ' ')
			p++;
		if (strncmp(p, LMB_CALL_ROW, strlen(LMB_CALL_ROW)) != 0)
			continue;
		p += strlen(LMB_CALL_ROW);
		for (int i = 0; i < ncpu; i++) {
			cal[i] = strtoll(p, &end, 10);
			p = end;
		}
		found = 1;
	}
	fclose(f);
	return found ? 0 : -1;
}

#endif /* LMB_GUEST_INTERRUPTS_H */
