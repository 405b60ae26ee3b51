/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The kernel-call layer: membarrier(2) itself, with the registration a
 * private expedited command needs, and whether the kernel carries this
 * project's series.  Calls only sys.c.
 */
#include "internal.h"

#include <errno.h>
#include <fcntl.h>

static int lmb_register_command_for(int cmd)
{
	switch (cmd) {
	case MEMBARRIER_CMD_PRIVATE_EXPEDITED:
		return MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED;
	case MEMBARRIER_CMD_PRIVATE_EXPEDITED_SYNC_CORE:
		return MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED_SYNC_CORE;
	case MEMBARRIER_CMD_PRIVATE_EXPEDITED_RSEQ:
		return MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED_RSEQ;
	}
	return 0;
}

int lmb_kernel_retry(int cmd, unsigned int flags, int cpu_id)
{
	int reg = lmb_register_command_for(cmd);

	/*
	 * EPERM from a private expedited command means the process is not
	 * registered for it: never registered, or registered and then lost
	 * (a process restored by CRIU before it migrated registrations).
	 * Register once and retry.
	 */
	if (reg != 0 && lmb_sys_membarrier(reg, 0, 0) == 0)
		return lmb_sys_membarrier(cmd, flags, cpu_id);
	return -EPERM;
}

int lmb_kernel_call(int cmd, unsigned int flags, int cpu_id)
{
	int ret = lmb_sys_membarrier(cmd, flags, cpu_id);

	return ret == -EPERM ? lmb_kernel_retry(cmd, flags, cpu_id) : ret;
}

/*
 * 1 << 10 is this project's number, not upstream's: a later upstream
 * command could take it.  The heavy barrier relies on it only where the
 * kernel also shows the series' own sysctl.
 */
int lmb_series_signature(void)
{
	return lmb_syscall(SYS_faccessat, AT_FDCWD,
			   (long)"/proc/sys/kernel/membarrier_expedited_max_rate", F_OK, 0) == 0;
}
