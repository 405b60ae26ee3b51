/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "internal.h"

#include <errno.h>

int lmb_heavy(lmb_state_t st)
{
	int mechanism = lmb_st_heavy(st);
	int cmd, ret;

	switch (mechanism) {
	case MEMBARRIER_MECHANISM_PRIVATE_EXPEDITED:
		cmd = MEMBARRIER_CMD_PRIVATE_EXPEDITED;
		break;
	case MEMBARRIER_MECHANISM_SHARED_EXPEDITED:
		cmd = MEMBARRIER_CMD_SHARED_EXPEDITED;
		break;
	case MEMBARRIER_MECHANISM_GLOBAL:
		cmd = MEMBARRIER_CMD_GLOBAL;
		break;
	case MEMBARRIER_MECHANISM_SIGNAL:
		ret = lmb_signal_barrier(lmb_st_signal(st));
		goto out;
	default:
		/* FENCE: membarrier_light() is a fence too. */
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
		return 0;
	}

	ret = lmb_kernel_call(cmd, 0, 0);
out:
	if (ret < 0) {
		errno = -ret;
		return -1;
	}
	return 0;
}

LMB_EXPORT int membarrier_heavy(void)
{
	return lmb_heavy(lmb_state());
}

/* The out-of-line light barrier, for callers that cannot use the inline. */
#undef membarrier_light
LMB_EXPORT void membarrier_light(void)
{
	if (__atomic_load_n(&libmembarrier_light_fence, __ATOMIC_RELAXED))
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
	else
		__asm__ __volatile__("" : : : "memory");
}
