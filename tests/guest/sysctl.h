/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The patched kernel's knobs as files: read and write one number, and the
 * three counters of kernel.membarrier_expedited_stats.  Shared by the guest
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
 * kernel.membarrier_expedited_stats: IPI rounds, throttled, disabled.
 * Returns 0, or -1 with st all 0.
 */
static inline int read_membarrier_stats(unsigned long st[3])
{
	FILE *f = fopen(SYSCTL_STATS, "r");
	int n = 0;

	if (f) {
		n = fscanf(f, "%lu %lu %lu", &st[0], &st[1], &st[2]);
		fclose(f);
	}
	if (n == 3)
		return 0;
	st[0] = st[1] = st[2] = 0;
	return -1;
}

#endif
