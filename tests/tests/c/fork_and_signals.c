/*
 * What ordinary process life does beside verbs, through unmodified rdma-core on a device
 * file: a fork whose child closes every descriptor it inherited (as daemons do) must not
 * tear down the parent's QPs, which then connect and carry an RDMA WRITE; and write(2)
 * from a signal handler, while the main loop writes too, must never wait on the device
 * file's bookkeeping. Prints "fork and signals ok" on success; anything else exits
 * non-zero saying what failed.
 */
#include "rc_loopback.h"
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static struct ibv_cq *cq;
static int null_fd;
static volatile sig_atomic_t handled;

static void on_alarm(int sig)
{
	(void)sig;
	if (write(null_fd, "s", 1) == 1)
		handled++;
}

int main(void)
{
	union ibv_gid gid;
	struct ibv_context *ctx = rc_open_first(&gid);
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	if (!pd || !cq)
		FAIL("PD or CQ failed");
	static char target[64], text[] = "written after the fork";
	struct ibv_mr *mr = ibv_reg_mr(pd, target, sizeof target,
				       IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	if (!mr)
		FAIL("ibv_reg_mr failed");
	struct ibv_qp *a = rc_qp(pd, cq, IBV_ACCESS_REMOTE_WRITE);
	struct ibv_qp *b = rc_qp(pd, cq, IBV_ACCESS_REMOTE_WRITE);

	/* The child closes everything it inherited, the device file included, and exits. */
	pid_t child = fork();
	if (child < 0)
		FAIL("fork failed");
	if (child == 0) {
		for (int fd = 3; fd < 1024; fd++)
			close(fd);
		_exit(0);
	}
	int status;
	if (waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status))
		FAIL("the child did not exit cleanly (status %#x)", status);

	rc_connect(a, b->qp_num, &gid);
	rc_connect(b, a->qp_num, &gid);
	rc_write_inline(a, (uintptr_t)target, mr->rkey, text);
	struct ibv_wc wc;
	time_t start = time(NULL);
	int n;
	while ((n = ibv_poll_cq(cq, 1, &wc)) == 0)
		if (time(NULL) - start > 10)
			FAIL("no completion within 10 s of the fork");
	if (n < 0 || wc.status != IBV_WC_SUCCESS)
		FAIL("the RDMA WRITE after the fork failed: %s", ibv_wc_status_str(wc.status));
	if (strcmp(target, text) != 0)
		FAIL("the RDMA WRITE after the fork did not land");

	/* write(2) in a signal handler every 20 us while the main loop writes, for 0.3 s. */
	null_fd = open("/dev/null", O_WRONLY);
	if (null_fd < 0)
		FAIL("open /dev/null failed");
	struct sigaction sa = { .sa_handler = on_alarm };
	sigaction(SIGALRM, &sa, NULL);
	struct itimerval it = { .it_interval = { 0, 20 }, .it_value = { 0, 20 } };
	setitimer(ITIMER_REAL, &it, NULL);
	struct timespec t0, now;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		if (write(null_fd, "m", 1) != 1)
			FAIL("write to /dev/null failed");
		clock_gettime(CLOCK_MONOTONIC, &now);
	} while ((now.tv_sec - t0.tv_sec) * 1000000000L + (now.tv_nsec - t0.tv_nsec) < 300000000L);
	struct itimerval off = { { 0, 0 }, { 0, 0 } };
	setitimer(ITIMER_REAL, &off, NULL);
	if (handled == 0)
		FAIL("the signal handler never ran");
	printf("fork and signals ok (%d handler writes)\n", (int)handled);
	return 0;
}
