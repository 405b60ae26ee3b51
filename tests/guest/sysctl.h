/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The patched kernel's knobs as files: read and write one number, and the
 * named counters of kernel.membarrier_expedited_stats.  Shared by the guest
 * programs (mbtool.c, stress.c) and bench/fair.c.
 */
#ifndef LMB_GUEST_SYSCTL_H
#define LMB_GUEST_SYSCTL_H

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SYSCTL_EXPEDITED "/proc/sys/kernel/membarrier_expedited"
#define SYSCTL_MAX_RATE "/proc/sys/kernel/membarrier_expedited_max_rate"
#define SYSCTL_STATS "/proc/sys/kernel/membarrier_expedited_stats"
#define RCU_EXPEDITED "/sys/kernel/rcu_expedited"

/* Returns the value, or -errno. */
static inline long read_long(const char *path)
{
	char buf[64];
	ssize_t n;
	int fd = open(path, O_RDONLY);

	if (fd < 0)
		return -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n < 0)
		return -errno;
	buf[n] = 0;
	return strtol(buf, NULL, 10);
}

/* Returns 0 or -errno (of open or write). */
static inline int write_long(const char *path, long v)
{
	char buf[64];
	int fd, ret = 0;

	fd = open(path, O_WRONLY);
	if (fd < 0)
		return -errno;
	snprintf(buf, sizeof(buf), "%ld\n", v);
	if (write(fd, buf, strlen(buf)) < 0)
		ret = -errno;
	close(fd);
	return ret;
}

/*
 * kernel.membarrier_expedited_stats (root only): how the calls of
 * SHARED_EXPEDITED were served, one "name value" line each.
 */
struct membarrier_stats {
	unsigned long long ran;		/* ran an IPI round */
	unsigned long long joined;	/* served by a round another caller ran */
	unsigned long long paced;	/* over budget: waited for a paced round */
	unsigned long long grace_period; /* membarrier_expedited = 0 */
};

/* Returns 0, or -1 with *st all 0 (unreadable, or a name missing). */
static inline int read_membarrier_stats(struct membarrier_stats *st)
{
	FILE *f = fopen(SYSCTL_STATS, "r");
	unsigned long long v;
	char name[32];
	int seen = 0;

	memset(st, 0, sizeof(*st));
	if (!f)
		return -1;
	while (fscanf(f, "%31s %llu", name, &v) == 2) {
		if (!strcmp(name, "ran"))
			st->ran = v, seen |= 1;
		else if (!strcmp(name, "joined"))
			st->joined = v, seen |= 2;
		else if (!strcmp(name, "paced"))
			st->paced = v, seen |= 4;
		else if (!strcmp(name, "grace_period"))
			st->grace_period = v, seen |= 8;
	}
	fclose(f);
	if (seen == 15)
		return 0;
	memset(st, 0, sizeof(*st));
	return -1;
}

/* b - a, counter by counter. */
static inline struct membarrier_stats membarrier_stats_sub(const struct membarrier_stats *b,
							    const struct membarrier_stats *a)
{
	struct membarrier_stats d = {
		b->ran - a->ran, b->joined - a->joined, b->paced - a->paced,
		b->grace_period - a->grace_period,
	};

	return d;
}

#endif
