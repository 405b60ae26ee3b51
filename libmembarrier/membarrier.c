/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * membarrier(2) with glibc's conventions.
 *
 * - QUERY is answered from the cache (state.c), plus the commands the
 *   library emulates.
 * - A command outside that mask fails with EINVAL, as the kernel would,
 *   without a system call: the kernel promises EINVAL and ENOSYS answers
 *   do not change until reboot.
 * - A command the kernel has goes to the kernel, flags and cpu_id
 *   untouched, so bad flags get the kernel's own EINVAL.  If a private
 *   expedited command answers EPERM because the process is not (or no
 *   longer, e.g. after a CRIU restore) registered, the library registers
 *   once and retries.
 * - An emulated command (PRIVATE_EXPEDITED and its registration, where the
 *   kernel lacks them) is served by membarrier_heavy()'s mechanism.
 *
 * Async-signal-safe: no locks, no allocation, errno set only on failure.
 */
#include "internal.h"

#include <errno.h>

static int lmb_fail(int err)
{
	errno = err;
	return -1;
}

LMB_EXPORT int membarrier(int cmd, unsigned int flags, int cpu_id)
{
	lmb_state_t st = lmb_state();
	int kmask = lmb_st_kmask(st);
	int emulated = lmb_emulated_commands(st);

	if (cmd == MEMBARRIER_CMD_QUERY) {
		if (flags != 0)
			return lmb_fail(EINVAL);
		return kmask | emulated;
	}
	/* Every command is a single bit. */
	if (cmd < 0 || (cmd & (cmd - 1)) != 0)
		return lmb_fail(EINVAL);
	if (kmask & cmd) {
		int ret = lmb_kernel_call(cmd, flags, cpu_id);

		return ret < 0 ? lmb_fail(-ret) : ret;
	}
	if (!(emulated & cmd) || flags != 0)
		return lmb_fail(EINVAL);
	if (cmd == MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED)
		return 0;
	return lmb_heavy(st);
}
