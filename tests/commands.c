/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Every command against the running kernel, through the library, checked
 * against the kernel's own QUERY answer.
 */
#include <errno.h>
#include <string.h>

#include "tap.h"
#include "testlib.h"

static const int all_commands[] = {
	MEMBARRIER_CMD_GLOBAL,
	MEMBARRIER_CMD_GLOBAL_EXPEDITED,
	MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED,
	MEMBARRIER_CMD_PRIVATE_EXPEDITED,
	MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED,
	MEMBARRIER_CMD_PRIVATE_EXPEDITED_SYNC_CORE,
	MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED_SYNC_CORE,
	MEMBARRIER_CMD_PRIVATE_EXPEDITED_RSEQ,
	MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED_RSEQ,
	MEMBARRIER_CMD_GET_REGISTRATIONS,
	MEMBARRIER_CMD_SHARED_EXPEDITED,
};
#define NCMD ((int)(sizeof(all_commands) / sizeof(all_commands[0])))

int main(void)
{
	struct membarrier_strategy st;
	int kmask, lmask, early;

	tap_plan(NCMD + 10);

	/* Before the program calls anything: did the constructor register? */
	early = raw_membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0);
	kmask = raw_membarrier(MEMBARRIER_CMD_QUERY, 0, 0);
	if (kmask < 0)
		tap_bail("this kernel has no membarrier (%s): the host tests need one",
			 strerror(-kmask));
	tap_diag("kernel QUERY mask 0x%x", (unsigned int)kmask);

	if (!tap_ok(membarrier_get_strategy(&st, sizeof(st)) == 0, "membarrier_get_strategy"))
		tap_bail("no strategy");
	lmask = membarrier(MEMBARRIER_CMD_QUERY, 0, 0);
	tap_ok(lmask == (kmask | st.emulated_commands),
	       "library QUERY 0x%x = kernel 0x%x | emulated 0x%x", (unsigned int)lmask,
	       (unsigned int)kmask, (unsigned int)st.emulated_commands);
	tap_ok(st.kernel_commands == kmask && st.kernel_errno == 0,
	       "strategy reports the kernel's mask");

	if (kmask & MEMBARRIER_CMD_PRIVATE_EXPEDITED) {
		tap_ok(st.heavy == MEMBARRIER_MECHANISM_PRIVATE_EXPEDITED && !st.light_is_fence,
		       "heavy uses PRIVATE_EXPEDITED (%s), light is a compiler barrier",
		       membarrier_mechanism_name(st.heavy));
		tap_ok(early == 0,
		       "the library registered PRIVATE_EXPEDITED before main (raw call: %d)",
		       early);
		tap_ok(st.emulated_commands == 0, "nothing emulated where the kernel has it all");
	} else {
		tap_ok(st.heavy != MEMBARRIER_MECHANISM_PRIVATE_EXPEDITED,
		       "heavy is %s without PRIVATE_EXPEDITED", membarrier_mechanism_name(st.heavy));
		tap_ok(1, "# SKIP kernel lacks PRIVATE_EXPEDITED");
		tap_ok(st.emulated_commands != 0, "PRIVATE_EXPEDITED emulated");
	}

	for (int i = 0; i < NCMD; i++) {
		int cmd = all_commands[i];
		int ret;

		errno = 0;
		ret = membarrier(cmd, 0, 0);
		if (lmask & cmd)
			tap_ok(ret >= 0, "command 0x%x supported: returns %d (%s)",
			       (unsigned int)cmd, ret, ret < 0 ? strerror(errno) : "ok");
		else
			tap_ok(ret == -1 && errno == EINVAL,
			       "command 0x%x unsupported: -1 EINVAL (got %d, %s)",
			       (unsigned int)cmd, ret, strerror(errno));
	}

	if (kmask & MEMBARRIER_CMD_PRIVATE_EXPEDITED_RSEQ)
		tap_ok(membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED_RSEQ,
				  MEMBARRIER_CMD_FLAG_CPU, 0) == 0,
		       "PRIVATE_EXPEDITED_RSEQ with MEMBARRIER_CMD_FLAG_CPU on CPU 0");
	else
		tap_ok(1, "# SKIP kernel lacks PRIVATE_EXPEDITED_RSEQ");

	/* The loop above called the private commands without registering. */
	if (kmask & MEMBARRIER_CMD_GET_REGISTRATIONS) {
		int want = 0, regs = membarrier(MEMBARRIER_CMD_GET_REGISTRATIONS, 0, 0);

		if (kmask & MEMBARRIER_CMD_PRIVATE_EXPEDITED_SYNC_CORE)
			want |= MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED_SYNC_CORE;
		if (kmask & MEMBARRIER_CMD_PRIVATE_EXPEDITED_RSEQ)
			want |= MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED_RSEQ;
		want |= MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED;
		tap_ok(regs >= 0 && (regs & want) == want,
		       "registrations 0x%x include 0x%x made automatically",
		       (unsigned int)regs, (unsigned int)want);
	} else {
		/* Before Linux 6.3: the kernel's own answer to an unregistered
		 * caller, EPERM, is what would show a missing registration. */
		static const int private_cmds[] = {
			MEMBARRIER_CMD_PRIVATE_EXPEDITED,
			MEMBARRIER_CMD_PRIVATE_EXPEDITED_SYNC_CORE,
			MEMBARRIER_CMD_PRIVATE_EXPEDITED_RSEQ,
		};
		int bad = 0;

		for (size_t i = 0; i < sizeof(private_cmds) / sizeof(private_cmds[0]); i++)
			if ((kmask & private_cmds[i]) &&
			    raw_membarrier(private_cmds[i], 0, 0) != 0)
				bad |= private_cmds[i];
		tap_ok(bad == 0,
		       "no GET_REGISTRATIONS: raw calls show every private command registered "
		       "automatically (unregistered: 0x%x)", (unsigned int)bad);
	}

	tap_ok(membarrier_heavy() == 0, "membarrier_heavy()");
	membarrier_light();
	(membarrier_light)();
	tap_ok(1, "membarrier_light(), inline and out of line");
	return tap_exit();
}
