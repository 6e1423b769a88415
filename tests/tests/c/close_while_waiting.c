/*
 * close_while_waiting: dat_evd_free and dat_ia_close(ABRUPT) while another thread waits
 * in dat_evd_wait with an infinite timeout, then calls on the freed or closed handles,
 * through libdat2 and whatever provider dat.conf names.
 *
 *   close_while_waiting [-P ia_name]
 *
 * Freeing an EVD no endpoint uses, the waiter must return DAT_ABORT and the free succeed;
 * freeing one an endpoint uses must fail (DAT_INVALID_STATE) and leave the waiter
 * waiting. Closing the IA, the waiter must return DAT_ABORT (its IA was closed), and the
 * calls on the closed IA's handles DAT_INVALID_HANDLE. libdat2 unloads a provider when its last IA closes: a
 * provider that let itself be unloaded would crash here (the waiter inside it, the stale
 * handles dispatching into unmapped code).
 *
 * Every step prints a line the test driver (tests/tests/c_close_while_waiting.rs)
 * checks; the program ends with "close_while_waiting: PASSED", or the failing step and
 * exit 1.
 *
 * Build: cc -pthread -o close_while_waiting close_while_waiting.c -ldat2
 */
#define _GNU_SOURCE /* pthread_timedjoin_np */
#include <dat2/udat.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static DAT_EVD_HANDLE dto_evd;
static DAT_RETURN waited;

static void fail(const char *step, DAT_RETURN r)
{
	const char *major = "", *minor = "";
	dat_strerror(r, &major, &minor);
	printf("close_while_waiting: FAILED at %s: 0x%x %s %s\n", step, r, major, minor);
	exit(1);
}

#define CHECK(call)                      \
	do {                             \
		DAT_RETURN r_ = (call);  \
		if (r_ != DAT_SUCCESS)   \
			fail(#call, r_); \
	} while (0)

/* Prints "close_while_waiting: <what>: <type name> <subtype name>". */
static void report(const char *what, DAT_RETURN r)
{
	const char *major = "", *minor = "";
	dat_strerror(r, &major, &minor);
	printf("close_while_waiting: %s: %s %s\n", what, major, minor);
}

static volatile int waiter_returned;

/* Waits on the EVD `arg` with no timeout; its result goes to `waited`. */
static void *waiter(void *arg)
{
	DAT_EVENT ev;
	DAT_COUNT more;
	waited = dat_evd_wait((DAT_EVD_HANDLE)arg, DAT_TIMEOUT_INFINITE, 1, &ev, &more);
	__atomic_store_n(&waiter_returned, 1, __ATOMIC_SEQ_CST);
	return NULL;
}

/* Starts `waiter` on `evd` and gives it time to fall asleep in dat_evd_wait. */
static void start_waiter(pthread_t *thread, DAT_EVD_HANDLE evd)
{
	__atomic_store_n(&waiter_returned, 0, __ATOMIC_SEQ_CST);
	if (pthread_create(thread, NULL, waiter, evd) != 0) {
		printf("close_while_waiting: FAILED: pthread_create\n");
		exit(1);
	}
	usleep(300 * 1000);
}

/* Joins `waiter`, which must return within 10 s. */
static void join_waiter(pthread_t thread, const char *after)
{
	struct timespec deadline;

	clock_gettime(CLOCK_REALTIME, &deadline);
	deadline.tv_sec += 10;
	if (pthread_timedjoin_np(thread, NULL, &deadline) != 0) {
		printf("close_while_waiting: FAILED: the waiter still waits 10 s after %s\n",
		       after);
		exit(1);
	}
}

/* Lines of /proc/self/maps naming libferrodat: 0 once the provider was unloaded. */
static int provider_mappings(void)
{
	char line[512];
	int n = 0;
	FILE *f = fopen("/proc/self/maps", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof line, f))
		if (strstr(line, "libferrodat"))
			n++;
	fclose(f);
	return n;
}

/* Opens IA `name` with a PZ, a DTO EVD, a connection EVD and an endpoint on them. */
static void open_ia(char *name, DAT_IA_HANDLE *ia, DAT_EP_HANDLE *ep)
{
	DAT_EVD_HANDLE async_evd = DAT_HANDLE_NULL, conn_evd;
	DAT_PZ_HANDLE pz;

	CHECK(dat_ia_open(name, 8, &async_evd, ia));
	CHECK(dat_pz_create(*ia, &pz));
	CHECK(dat_evd_create(*ia, 8, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG, &dto_evd));
	CHECK(dat_evd_create(*ia, 8, DAT_HANDLE_NULL, DAT_EVD_CONNECTION_FLAG, &conn_evd));
	CHECK(dat_ep_create(*ia, pz, dto_evd, dto_evd, conn_evd, NULL, ep));
}

int main(int argc, char **argv)
{
	char *name = "ferro-test0";
	DAT_IA_HANDLE ia;
	DAT_EP_HANDLE ep;
	DAT_EVD_HANDLE lone_evd;
	DAT_EVENT ev;
	pthread_t thread;
	DAT_RETURN r;
	int i;

	for (i = 1; i + 1 < argc; i += 2)
		if (strcmp(argv[i], "-P") == 0)
			name = argv[i + 1];
	setvbuf(stdout, NULL, _IOLBF, 0);

	/* The last IA closes with no other thread about: libdat2 unloads the provider. */
	open_ia(name, &ia, &ep);
	CHECK(dat_ia_close(ia, DAT_CLOSE_ABRUPT_FLAG));
	printf("close_while_waiting: provider mapped after the last IA close: %s\n",
	       provider_mappings() > 0 ? "yes" : "no");
	r = dat_ep_free(ep);
	report("dat_ep_free of the closed IA's endpoint", r);
	if (DAT_GET_TYPE(r) != DAT_INVALID_HANDLE)
		fail("dat_ep_free after the close", r);

	open_ia(name, &ia, &ep);
	/* An EVD no endpoint uses, freed under a waiter: the waiter is aborted, the free
	 * succeeds, and the handle is gone. */
	CHECK(dat_evd_create(ia, 8, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG, &lone_evd));
	start_waiter(&thread, lone_evd);
	r = dat_evd_free(lone_evd);
	report("dat_evd_free under a waiter", r);
	if (r != DAT_SUCCESS)
		fail("dat_evd_free under a waiter", r);
	join_waiter(thread, "its EVD was freed");
	report("the waiter on the freed EVD returned", waited);
	if (DAT_GET_TYPE(waited) != DAT_ABORT) {
		printf("close_while_waiting: FAILED: the waiter did not return DAT_ABORT\n");
		return 1;
	}
	r = dat_evd_dequeue(lone_evd, &ev);
	report("dat_evd_dequeue of the freed EVD", r);
	if (DAT_GET_TYPE(r) != DAT_INVALID_HANDLE)
		fail("dat_evd_dequeue after the free", r);

	/* The endpoint's EVD, with a thread waiting on it with no timeout: the free is
	 * refused and the waiter waits on; then the abrupt close aborts it. */
	start_waiter(&thread, dto_evd);
	r = dat_evd_free(dto_evd);
	report("dat_evd_free of an endpoint's EVD under a waiter", r);
	if (DAT_GET_TYPE(r) != DAT_INVALID_STATE)
		fail("dat_evd_free of an endpoint's EVD", r);
	usleep(100 * 1000);
	printf("close_while_waiting: the waiter still waits after the refused free: %s\n",
	       __atomic_load_n(&waiter_returned, __ATOMIC_SEQ_CST) ? "no" : "yes");
	CHECK(dat_ia_close(ia, DAT_CLOSE_ABRUPT_FLAG));
	printf("close_while_waiting: closed the IA abruptly under a waiter\n");
	join_waiter(thread, "the close");
	report("the waiter returned", waited);
	if (DAT_GET_TYPE(waited) != DAT_ABORT) {
		printf("close_while_waiting: FAILED: the waiter did not return DAT_ABORT\n");
		return 1;
	}
	r = dat_evd_free(dto_evd);
	report("dat_evd_free of the closed IA's EVD", r);
	if (DAT_GET_TYPE(r) != DAT_INVALID_HANDLE)
		fail("dat_evd_free after the close", r);

	printf("close_while_waiting: PASSED\n");
	return 0;
}
