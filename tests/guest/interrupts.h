/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The CAL row of /proc/interrupts, shared by the guest tests (mbtool.c)
 * and the benchmarks (bench/bench.h).
 */
#ifndef LMB_GUEST_INTERRUPTS_H
#define LMB_GUEST_INTERRUPTS_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*
 * Per-CPU counts of the CAL row of /proc/interrupts (x86: the IPIs of
 * smp_call_function*(), which membarrier's expedited commands and TLB
 * shootdowns send) for CPUs 0..ncpu-1.  Returns 0, or -1 when there is no
 * such row.
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
		if (strncmp(p, "CAL:", 4) != 0)
			continue;
		p += 4;
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
