/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * membarrier(2) with glibc's conventions.
 *
 * - QUERY is answered from the cache (state.c), plus the commands the
 *   library emulates.
 * - A command the kernel has goes to the kernel, flags and cpu_id
 *   untouched, so bad flags get the kernel's own EINVAL.  If a private
 *   expedited command answers EPERM because the process is not (or no
 *   longer, e.g. after a CRIU restore) registered, the library registers
 *   once and retries (kernel.c).  If the kernel then still refuses one
 *   of the commands the library would emulate without it (EPERM, or
 *   ENOSYS: a seccomp filter installed after start-up, a process restored
 *   onto a kernel without the registration), the library emulates it
 *   for this call, as where the kernel never had it (mechanism.c).
 * - An emulated command (PRIVATE_EXPEDITED and its registration where the
 *   kernel lacks them; PRIVATE_EXPEDITED_SYNC_CORE and its registration
 *   where the signal mechanism can serialise cores) is served by the
 *   library; flags other than 0 are EINVAL, as the kernel would say.
 * - Any other command fails as the bare system call would, without a
 *   system call: the kernel promises that QUERY's answer, and the ENOSYS
 *   or EINVAL of a command, do not change until reboot.  So: the errno
 *   the kernel gave to QUERY when QUERY failed (ENOSYS without
 *   CONFIG_MEMBARRIER, ENOSYS or EPERM from a seccomp filter), EINVAL
 *   when the kernel answered QUERY without that command.
 * - With LIBMEMBARRIER_HEAVY=signal|fence the library did not ask the
 *   kernel: QUERY asks it now (once), and any command not emulated goes
 *   to the kernel as it is, but for MEMBARRIER_CMD_SHARED_EXPEDITED, which
 *   goes only to a kernel that has it and shows this project's series
 *   (state.c): elsewhere bit 10 may mean something else.
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

static int lmb_result(int ret)
{
	return ret < 0 ? lmb_fail(-ret) : ret;
}

/*
 * A command that went to the kernel failed: after EPERM, register and
 * retry once (kernel.c); if the kernel still refuses (EPERM, or ENOSYS
 * from a sandbox set up after start-up) a command the library emulates
 * elsewhere is emulated (mechanism.c); otherwise errno as the kernel's.
 */
__attribute__((noinline)) static int lmb_membarrier_failed(int cmd, unsigned int flags,
							   int cpu_id, int ret)
{
	if (ret == -EPERM)
		ret = lmb_kernel_retry(cmd, flags, cpu_id);
	if ((ret == -EPERM || ret == -ENOSYS) && flags == 0)
		ret = lmb_mech_emulate(cmd, ret);
	return lmb_result(ret);
}

/* Everything but the common calls: see the comment at the top. */
__attribute__((noinline)) static int lmb_membarrier_slow(int cmd, unsigned int flags,
							 int cpu_id)
{
	lmb_state_t st = lmb_state();
	int emulated = lmb_emulated_commands(st);
	int single = cmd > 0 && (cmd & (cmd - 1)) == 0, ret;

	if (cmd == MEMBARRIER_CMD_QUERY) {
		int kq = lmb_kernel_query();

		if (flags != 0)
			return lmb_fail(kq < 0 ? -kq : EINVAL);
		return (kq < 0 ? 0 : kq) | emulated;
	}
	if (single && (emulated & cmd)) {
		if (flags != 0)
			return lmb_fail(EINVAL);
		switch (cmd) {
		case MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED:
		case MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED_SYNC_CORE:
			return 0;
		case MEMBARRIER_CMD_PRIVATE_EXPEDITED_SYNC_CORE:
			return lmb_result(lmb_mech_sync_core());
		default:
			return lmb_mech_barrier(lmb_st_heavy(st));
		}
	}
	if ((st.lib & LMB_L_SKIPPED) && cmd == MEMBARRIER_CMD_SHARED_EXPEDITED) {
		/* Only to a kernel known to be ours: see lmb_query_word(). */
		int kq = lmb_kernel_query();

		if (kq < 0)
			return lmb_fail(-kq);
		if (!(kq & cmd))
			return lmb_fail(EINVAL);
	}
	if (st.lib & LMB_L_SKIPPED)
		return lmb_result(lmb_kernel_call(cmd, flags, cpu_id));
	if (lmb_st_kerrno(st))
		return lmb_fail(lmb_st_kerrno(st));
	if (!single || !(lmb_st_kmask(st) & cmd))
		return lmb_fail(EINVAL);
	ret = lmb_sys_membarrier(cmd, flags, cpu_id);
	return ret >= 0 ? ret : lmb_membarrier_failed(cmd, flags, cpu_id, ret);
}

/*
 * The common calls, once the kernel answered the library's own QUERY (not
 * with LIBMEMBARRIER_HEAVY=signal|fence, where the forced mechanism serves
 * PRIVATE_EXPEDITED): QUERY itself, from the cache, and any command with
 * a bit the kernel has, which goes to the kernel as it is.  The library
 * emulates only commands the kernel lacks, and the kernel gives a
 * combination of commands, or a negative one, the EINVAL that the bare
 * system call would.
 */
LMB_EXPORT int membarrier(int cmd, unsigned int flags, int cpu_id)
{
	if (cmd == MEMBARRIER_CMD_QUERY) {
		uint32_t q = __atomic_load_n(&libmembarrier_query_answer, __ATOMIC_RELAXED);

		if (__builtin_expect((q & LMB_Q_VALID) && flags == 0, 1))
			return (int)(q & ~LMB_Q_VALID);
	} else if (__builtin_expect((uint32_t)cmd &
				    __atomic_load_n(&lmb_fast_word, __ATOMIC_RELAXED), 1)) {
		int ret = lmb_sys_membarrier(cmd, flags, cpu_id);

		if (__builtin_expect(ret >= 0, 1))
			return ret;
		return lmb_membarrier_failed(cmd, flags, cpu_id, ret);
	}
	return lmb_membarrier_slow(cmd, flags, cpu_id);
}
