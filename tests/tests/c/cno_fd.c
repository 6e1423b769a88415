/*
 * cno_fd: dat_cno_fd_create and dat_cno_trigger through libdat2 and whatever provider
 * dat.conf names, as an event loop would use them: one process, two IAs (a server and a
 * client side) connected through a PSP.
 *
 *   cno_fd [-P ia_name] [-n messages]
 *
 * The server's receive EVD reports to a CNO made with dat_cno_fd_create. For each of the
 * client's messages the server poll()s the CNO's fd, which must become readable, calls
 * dat_cno_trigger, which must name the receive EVD, dequeues the message, and checks that
 * the fd is no longer readable. A software event on a second EVD of the CNO triggers it
 * the same way. Also checked: dat_cno_query reports the fd (DAT_PROXY_TYPE_FD), the
 * refusals of NULL pointers and wrong handles, dat_cno_free refused while EVDs report to
 * the CNO, and after it the fd closed and the handle refused.
 *
 * The stock libdat2 exports no dat_cno_fd_create or dat_cno_trigger symbol (OFA's leaves
 * them out): a consumer calls them through udat_redirection.h's DAT_CNO_FD_CREATE and
 * DAT_CNO_TRIGGER, which go straight to the provider table of the handle they are given.
 * The IA handle dat_ia_open returns is libdat2's own (an index, not the provider's
 * object), so DAT_CNO_FD_CREATE takes the provider's IA handle, which any object's query
 * reports (here a PZ's: dat_pz_query's ia_handle).
 *
 * Every step prints a line the test driver (tests/tests/c_cno_fd.rs) checks; the program
 * ends with "cno_fd: PASSED", or the failing step and exit 1.
 *
 * Build: cc -o cno_fd cno_fd.c -ldat2 (headers from libdapl-dev)
 */
#include <dat2/udat.h>
#include <dat2/udat_redirection.h> /* DAT_CNO_FD_CREATE, DAT_CNO_TRIGGER */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define BUF_SIZE 4096
#define WAIT_US (30 * 1000 * 1000)
#define READABLE_MS 5000 /* a message that does not make the fd readable by then is lost */

static void fail(const char *step, DAT_RETURN r)
{
	const char *major = "", *minor = "";
	dat_strerror(r, &major, &minor);
	printf("cno_fd: FAILED at %s: 0x%x %s %s\n", step, r, major, minor);
	exit(1);
}

#define CHECK(call)                      \
	do {                             \
		DAT_RETURN r_ = (call);  \
		if (r_ != DAT_SUCCESS)   \
			fail(#call, r_); \
	} while (0)

static void expect(int ok, const char *what)
{
	if (!ok) {
		printf("cno_fd: FAILED: %s\n", what);
		exit(1);
	}
}

/* Prints "cno_fd: <what>: <type name> <subtype name>" for a refused call. */
static void refused(const char *what, DAT_RETURN r)
{
	const char *major = "", *minor = "";
	expect(r != DAT_SUCCESS, what);
	dat_strerror(r, &major, &minor);
	printf("cno_fd: %s: %s %s\n", what, major, minor);
}

/* Whether `fd` is readable within `ms` milliseconds. */
static int readable(int fd, int ms)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};
	int n = poll(&p, 1, ms);
	expect(n >= 0, "poll");
	expect((p.revents & (POLLERR | POLLNVAL)) == 0, "poll reports no error on the CNO's fd");
	return n == 1;
}

static void wait_event(DAT_EVD_HANDLE evd, DAT_EVENT_NUMBER number, DAT_EVENT *ev, const char *what)
{
	DAT_COUNT more;
	CHECK(dat_evd_wait(evd, WAIT_US, 1, ev, &more));
	if (ev->event_number != number) {
		printf("cno_fd: FAILED waiting for %s: event 0x%x\n", what, ev->event_number);
		exit(1);
	}
}

struct side {
	DAT_IA_HANDLE ia;
	DAT_PZ_HANDLE pz;
	DAT_EVD_HANDLE conn, req, recv;
	DAT_EP_HANDLE ep;
	DAT_LMR_HANDLE lmr;
	DAT_LMR_CONTEXT lctx;
	char *buf;
};

/* On IA `ia`: a PZ, EVDs (the receive EVD reporting to `cno_for_recv`, which may be
 * NULL), an endpoint and a registered buffer. */
static void setup(DAT_IA_HANDLE ia, struct side *s, DAT_CNO_HANDLE cno_for_recv)
{
	DAT_RMR_CONTEXT rctx;
	s->ia = ia;
	CHECK(dat_pz_create(s->ia, &s->pz));
	CHECK(dat_evd_create(s->ia, 8, DAT_HANDLE_NULL, DAT_EVD_CONNECTION_FLAG, &s->conn));
	CHECK(dat_evd_create(s->ia, 16, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG, &s->req));
	CHECK(dat_evd_create(s->ia, 16, cno_for_recv, DAT_EVD_DTO_FLAG, &s->recv));
	CHECK(dat_ep_create(s->ia, s->pz, s->recv, s->req, s->conn, NULL, &s->ep));
	s->buf = aligned_alloc(4096, BUF_SIZE);
	expect(s->buf != NULL, "allocate the buffer");
	memset(s->buf, 0, BUF_SIZE);
	DAT_REGION_DESCRIPTION region = {.for_va = s->buf};
	CHECK(dat_lmr_create(s->ia, DAT_MEM_TYPE_VIRTUAL, region, BUF_SIZE, s->pz, DAT_MEM_PRIV_ALL_FLAG,
			     DAT_VA_TYPE_VA, &s->lmr, &s->lctx, &rctx, NULL, NULL));
}

static DAT_LMR_TRIPLET iov(struct side *s, int offset, int len)
{
	DAT_LMR_TRIPLET t = {.lmr_context = s->lctx,
			     .virtual_address = (DAT_VADDR)(uintptr_t)(s->buf + offset),
			     .segment_length = (DAT_SEG_LENGTH)len};
	return t;
}

static void teardown(struct side *s)
{
	CHECK(dat_ep_free(s->ep));
	CHECK(dat_lmr_free(s->lmr));
	CHECK(dat_evd_free(s->req));
	CHECK(dat_evd_free(s->recv));
	CHECK(dat_evd_free(s->conn));
	CHECK(dat_pz_free(s->pz));
	CHECK(dat_ia_close(s->ia, DAT_CLOSE_GRACEFUL_FLAG));
	free(s->buf);
}

int main(int argc, char **argv)
{
	char *name = "ferro0";
	int messages = 100, ch;
	while ((ch = getopt(argc, argv, "P:n:")) != -1) {
		switch (ch) {
		case 'P': name = optarg; break;
		case 'n': messages = atoi(optarg); break;
		default:
			fprintf(stderr, "usage: cno_fd [-P ia_name] [-n messages]\n");
			return 2;
		}
	}
	setvbuf(stdout, NULL, _IOLBF, 0);

	/* The server's IA first, for its CNO. */
	DAT_IA_HANDLE sia;
	DAT_EVD_HANDLE async = DAT_HANDLE_NULL;
	CHECK(dat_ia_open(name, 8, &async, &sia));
	DAT_PZ_HANDLE first_pz;
	DAT_PZ_PARAM pzp;
	CHECK(dat_pz_create(sia, &first_pz));
	CHECK(dat_pz_query(first_pz, DAT_PZ_FIELD_ALL, &pzp));
	DAT_IA_HANDLE provider_ia = pzp.ia_handle;
	CHECK(dat_pz_free(first_pz));
	DAT_CNO_HANDLE cno = DAT_HANDLE_NULL;
	DAT_FD fd = -1;
	refused("dat_cno_fd_create with a NULL fd pointer", DAT_CNO_FD_CREATE(provider_ia, NULL, &cno));
	refused("dat_cno_fd_create with a NULL CNO pointer", DAT_CNO_FD_CREATE(provider_ia, &fd, NULL));
	CHECK(DAT_CNO_FD_CREATE(provider_ia, &fd, &cno));
	expect(fd >= 0 && cno != DAT_HANDLE_NULL, "dat_cno_fd_create gives an fd and a CNO");
	DAT_CNO_PARAM cp;
	CHECK(dat_cno_query(cno, DAT_CNO_FIELD_ALL, &cp));
	printf("cno_fd: dat_cno_query: proxy_type %d, the fd: %s\n", (int)cp.proxy_type,
	       cp.proxy.fd == fd ? "yes" : "no");
	expect(cp.proxy_type == DAT_PROXY_TYPE_FD && cp.proxy.fd == fd && cp.ia_handle == provider_ia,
	       "dat_cno_query reports the IA and the fd");
	printf("cno_fd: readable before anything happened: %s\n", readable(fd, 0) ? "yes" : "no");

	struct side server, client;
	DAT_IA_HANDLE cia;
	setup(sia, &server, cno);
	async = DAT_HANDLE_NULL;
	CHECK(dat_ia_open(name, 8, &async, &cia));
	setup(cia, &client, DAT_HANDLE_NULL);

	/* Wrong handles and a NULL out pointer. */
	DAT_EVD_HANDLE hint = DAT_HANDLE_NULL;
	refused("dat_cno_trigger with a NULL EVD pointer", DAT_CNO_TRIGGER(cno, NULL));
	refused("dat_cno_trigger of an EVD handle", DAT_CNO_TRIGGER((DAT_CNO_HANDLE)server.req, &hint));

	/* Connect the client to the server. */
	DAT_EVD_HANDLE cr_evd;
	DAT_PSP_HANDLE psp;
	DAT_CONN_QUAL q = 0;
	DAT_EVENT ev;
	CHECK(dat_evd_create(server.ia, 4, DAT_HANDLE_NULL, DAT_EVD_CR_FLAG, &cr_evd));
	CHECK(dat_psp_create_any(server.ia, &q, cr_evd, DAT_PSP_CONSUMER_FLAG, &psp));
	struct addrinfo *target;
	expect(getaddrinfo("127.0.0.1", NULL, NULL, &target) == 0, "127.0.0.1 resolves");
	CHECK(dat_ep_connect(client.ep, (DAT_IA_ADDRESS_PTR)target->ai_addr, q, WAIT_US, 0, NULL, 0,
			     DAT_CONNECT_DEFAULT_FLAG));
	freeaddrinfo(target);
	wait_event(cr_evd, DAT_CONNECTION_REQUEST_EVENT, &ev, "the request");
	CHECK(dat_cr_accept(ev.event_data.cr_arrival_event_data.cr_handle, server.ep, 0, NULL));
	wait_event(client.conn, DAT_CONNECTION_EVENT_ESTABLISHED, &ev, "ESTABLISHED (client)");
	wait_event(server.conn, DAT_CONNECTION_EVENT_ESTABLISHED, &ev, "ESTABLISHED (server)");
	CHECK(DAT_CNO_TRIGGER(cno, &hint));
	printf("cno_fd: trigger before any message: %s\n", hint == DAT_HANDLE_NULL ? "DAT_HANDLE_NULL" : "an EVD");
	printf("cno_fd: readable before any message: %s\n", readable(fd, 0) ? "yes" : "no");

	/* The event loop: poll, trigger, dequeue. */
	int received = 0, empty = 0;
	for (int i = 0; i < messages; i++) {
		DAT_LMR_TRIPLET rx = iov(&server, 64 * (i % 32), 64), tx = iov(&client, 2048, 8);
		DAT_DTO_COOKIE k = {.as_64 = (DAT_UINT64)i};
		CHECK(dat_ep_post_recv(server.ep, 1, &rx, k, DAT_COMPLETION_DEFAULT_FLAG));
		memcpy(client.buf + 2048, &i, sizeof i);
		CHECK(dat_ep_post_send(client.ep, 1, &tx, k, DAT_COMPLETION_DEFAULT_FLAG));
		wait_event(client.req, DAT_DTO_COMPLETION_EVENT, &ev, "the send's completion");
		if (!readable(fd, READABLE_MS)) {
			printf("cno_fd: FAILED: message %d did not make the fd readable\n", i);
			exit(1);
		}
		CHECK(DAT_CNO_TRIGGER(cno, &hint));
		if (hint == DAT_HANDLE_NULL) {
			empty++;
			i--; /* the same message: poll again (its receive is still posted) */
			continue;
		}
		expect(hint == server.recv, "the trigger names the receive EVD");
		while (dat_evd_dequeue(server.recv, &ev) == DAT_SUCCESS) {
			DAT_DTO_COMPLETION_EVENT_DATA *d = &ev.event_data.dto_completion_event_data;
			expect(ev.event_number == DAT_DTO_COMPLETION_EVENT && d->status == DAT_DTO_SUCCESS &&
				       d->user_cookie.as_64 == (DAT_UINT64)received,
			       "the receives come in order");
			received++;
		}
		if (readable(fd, 0)) {
			printf("cno_fd: FAILED: the fd is readable after message %d was taken\n", i);
			exit(1);
		}
	}
	printf("cno_fd: %d messages received through poll and dat_cno_trigger, %d empty triggers\n",
	       received, empty);

	/* A software event on a second EVD of the CNO. */
	DAT_EVD_HANDLE soft;
	CHECK(dat_evd_create(server.ia, 4, cno, DAT_EVD_SOFTWARE_FLAG, &soft));
	DAT_EVENT se = {.event_number = DAT_SOFTWARE_EVENT, .evd_handle = soft};
	se.event_data.software_event_data.pointer = (DAT_PVOID)0x5eed;
	CHECK(dat_evd_post_se(soft, &se));
	expect(readable(fd, READABLE_MS), "the software event makes the fd readable");
	CHECK(DAT_CNO_TRIGGER(cno, &hint));
	printf("cno_fd: software event: the trigger names its EVD: %s\n", hint == soft ? "yes" : "no");
	expect(hint == soft, "the trigger names the software EVD");
	CHECK(dat_evd_dequeue(soft, &ev));
	printf("cno_fd: readable after the software event was taken: %s\n", readable(fd, 0) ? "yes" : "no");

	/* dat_cno_free: refused while EVDs report to the CNO; then the fd is closed. */
	refused("dat_cno_free with EVDs reporting to it", dat_cno_free(cno));
	CHECK(dat_evd_modify_cno(soft, DAT_HANDLE_NULL));
	CHECK(dat_evd_modify_cno(server.recv, DAT_HANDLE_NULL));
	CHECK(dat_evd_free(soft));
	CHECK(dat_cno_free(cno));
	errno = 0;
	int closed = fcntl(fd, F_GETFD) == -1 && errno == EBADF;
	printf("cno_fd: the fd is closed after dat_cno_free: %s\n", closed ? "yes" : "no");
	refused("dat_cno_trigger after dat_cno_free", DAT_CNO_TRIGGER(cno, &hint));

	CHECK(dat_ep_disconnect(client.ep, DAT_CLOSE_ABRUPT_FLAG));
	wait_event(client.conn, DAT_CONNECTION_EVENT_DISCONNECTED, &ev, "DISCONNECTED");
	wait_event(server.conn, DAT_CONNECTION_EVENT_DISCONNECTED, &ev, "DISCONNECTED (server)");
	CHECK(dat_psp_free(psp));
	CHECK(dat_evd_free(cr_evd));
	teardown(&client);
	teardown(&server);
	printf("cno_fd: PASSED\n");
	return 0;
}
