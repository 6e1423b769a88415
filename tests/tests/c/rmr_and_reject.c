/*
 * rmr_and_reject: DAT calls beyond the stock test programs' set, through libdat2 and
 * whatever provider dat.conf names, as a server and a client process.
 *
 *   server: rmr_and_reject -s [-P ia_name]
 *   client: rmr_and_reject -c server_ip -q conn_qual [-P ia_name]
 *
 * The server changes its endpoint's queue sizes with dat_ep_modify (and is refused a
 * read-only field), pre-posts two receives and reads them back with dat_ep_recv_query,
 * and listens with dat_psp_create_any, printing the conn_qual the provider picked. The
 * client's first request is rejected with private data, which the client must see with
 * PEER_REJECTED; the second is accepted. The server then binds an RMR over part of its
 * region (dat_rmr_create, dat_rmr_bind, the bind's completion event, dat_rmr_query) and
 * sends the client the RMR's triplet; the client RDMA-writes a pattern through it and
 * says "done"; the server checks that the pattern landed, that its LMR cannot be freed
 * while the RMR is bound in it, and frees the RMR. The client disconnects.
 *
 * Every step prints a line the test driver (tests/tests/c_rmr_and_reject.rs) checks;
 * each side ends with "rmr_and_reject <side>: PASSED", or the failing step and exit 1.
 *
 * Build: cc -o rmr_and_reject rmr_and_reject.c -ldat2 (headers from libdapl-dev)
 */
#include <dat2/udat.h>
#include <netdb.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define BUF_SIZE 4096
#define WINDOW_OFFSET 1024 /* the RMR covers [WINDOW_OFFSET, WINDOW_OFFSET + WINDOW_LEN) */
#define WINDOW_LEN 256
#define WRITE_OFFSET 16    /* where in the window the client writes */
#define WRITE_LEN 64
#define WAIT_US (30 * 1000 * 1000)

static const char *side = "?";
static const char reject_data[] = "not now, sir";

static void fail(const char *step, DAT_RETURN r)
{
	const char *major = "", *minor = "";
	dat_strerror(r, &major, &minor);
	printf("rmr_and_reject %s: FAILED at %s: 0x%x %s %s\n", side, step, r, major, minor);
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
		printf("rmr_and_reject %s: FAILED: %s\n", side, what);
		exit(1);
	}
}

/* Prints "<side>: <what>: <type name> <subtype name>" for a refused call. */
static void refused(const char *what, DAT_RETURN r)
{
	const char *major = "", *minor = "";
	expect(r != DAT_SUCCESS, what);
	dat_strerror(r, &major, &minor);
	printf("rmr_and_reject %s: %s refused: %s %s\n", side, what, major, minor);
}

static void wait_event(DAT_EVD_HANDLE evd, DAT_EVENT_NUMBER number, DAT_EVENT *ev, const char *what)
{
	DAT_COUNT more;
	CHECK(dat_evd_wait(evd, WAIT_US, 1, ev, &more));
	if (ev->event_number != number) {
		printf("rmr_and_reject %s: FAILED waiting for %s: event 0x%x\n", side, what,
		       ev->event_number);
		exit(1);
	}
}

static void wait_dto(DAT_EVD_HANDLE evd, DAT_UINT64 cookie, const char *what)
{
	DAT_EVENT ev;
	wait_event(evd, DAT_DTO_COMPLETION_EVENT, &ev, what);
	DAT_DTO_COMPLETION_EVENT_DATA *d = &ev.event_data.dto_completion_event_data;
	if (d->status != DAT_DTO_SUCCESS || d->user_cookie.as_64 != cookie) {
		printf("rmr_and_reject %s: FAILED at %s: status %d cookie %llu\n", side, what,
		       d->status, (unsigned long long)d->user_cookie.as_64);
		exit(1);
	}
}

/* What the server sends the client: where to write, in host order (one host). */
struct window {
	DAT_UINT64 va;
	DAT_UINT32 len;
	DAT_RMR_CONTEXT context;
};

static unsigned char pattern(int i) { return (unsigned char)(i * 7 + 3); }

struct common {
	DAT_IA_HANDLE ia;
	DAT_PZ_HANDLE pz;
	DAT_EVD_HANDLE conn, req, recv;
	DAT_EP_HANDLE ep;
	DAT_LMR_HANDLE lmr;
	DAT_LMR_CONTEXT lctx;
	DAT_RMR_CONTEXT lmr_rctx;
	char *buf;
};

static void setup(char *name, struct common *c)
{
	DAT_EVD_HANDLE async = DAT_HANDLE_NULL;
	CHECK(dat_ia_open(name, 8, &async, &c->ia));
	CHECK(dat_pz_create(c->ia, &c->pz));
	CHECK(dat_evd_create(c->ia, 8, DAT_HANDLE_NULL, DAT_EVD_CONNECTION_FLAG, &c->conn));
	/* RMR bind completions arrive on the request EVD of the endpoint the bind is posted on. */
	CHECK(dat_evd_create(c->ia, 16, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG | DAT_EVD_RMR_BIND_FLAG, &c->req));
	CHECK(dat_evd_create(c->ia, 16, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG, &c->recv));
	CHECK(dat_ep_create(c->ia, c->pz, c->recv, c->req, c->conn, NULL, &c->ep));
	c->buf = aligned_alloc(4096, BUF_SIZE);
	expect(c->buf != NULL, "allocate the buffer");
	memset(c->buf, 0, BUF_SIZE);
	DAT_REGION_DESCRIPTION region = {.for_va = c->buf};
	/* Local write lets RMRs bind in it; no remote rights of its own. */
	CHECK(dat_lmr_create(c->ia, DAT_MEM_TYPE_VIRTUAL, region, BUF_SIZE, c->pz, DAT_MEM_PRIV_LOCAL_WRITE_FLAG,
			     DAT_VA_TYPE_VA, &c->lmr, &c->lctx, &c->lmr_rctx, NULL, NULL));
}

static DAT_LMR_TRIPLET iov(struct common *c, int offset, int len)
{
	DAT_LMR_TRIPLET t = {.lmr_context = c->lctx,
			     .virtual_address = (DAT_VADDR)(uintptr_t)(c->buf + offset),
			     .segment_length = (DAT_SEG_LENGTH)len};
	return t;
}

static void teardown(struct common *c)
{
	CHECK(dat_ep_free(c->ep));
	CHECK(dat_lmr_free(c->lmr));
	CHECK(dat_evd_free(c->req));
	CHECK(dat_evd_free(c->recv));
	CHECK(dat_evd_free(c->conn));
	CHECK(dat_pz_free(c->pz));
	CHECK(dat_ia_close(c->ia, DAT_CLOSE_GRACEFUL_FLAG));
	free(c->buf);
}

static void server(char *name)
{
	struct common c;
	DAT_EVENT ev;
	setup(name, &c);

	/* dat_ep_modify: smaller queues, allowed while UNCONNECTED. */
	DAT_EP_PARAM p;
	CHECK(dat_ep_query(c.ep, DAT_EP_FIELD_ALL, &p));
	DAT_COUNT old_req = p.ep_attr.max_request_dtos, old_recv = p.ep_attr.max_recv_dtos;
	p.ep_attr.max_request_dtos = 8;
	p.ep_attr.max_recv_dtos = 8;
	CHECK(dat_ep_modify(c.ep, DAT_EP_FIELD_EP_ATTR_MAX_REQUEST_DTOS | DAT_EP_FIELD_EP_ATTR_MAX_RECV_DTOS, &p));
	CHECK(dat_ep_query(c.ep, DAT_EP_FIELD_ALL, &p));
	printf("rmr_and_reject server: ep_modify: max_request_dtos %d -> %d, max_recv_dtos %d -> %d\n",
	       old_req, p.ep_attr.max_request_dtos, old_recv, p.ep_attr.max_recv_dtos);
	refused("ep_modify of the IA handle", dat_ep_modify(c.ep, DAT_EP_FIELD_IA_HANDLE, &p));

	/* Two receives: the client's first message lands in the first, "done" in the second. */
	DAT_LMR_TRIPLET rx0 = iov(&c, 0, 64), rx1 = iov(&c, 64, 64);
	DAT_DTO_COOKIE k0 = {.as_64 = 100}, k1 = {.as_64 = 101};
	CHECK(dat_ep_post_recv(c.ep, 1, &rx0, k0, DAT_COMPLETION_DEFAULT_FLAG));
	CHECK(dat_ep_post_recv(c.ep, 1, &rx1, k1, DAT_COMPLETION_DEFAULT_FLAG));
	DAT_COUNT nbufs = -1, span = -1;
	CHECK(dat_ep_recv_query(c.ep, &nbufs, &span));
	printf("rmr_and_reject server: ep_recv_query: %d buffers, span %d\n", nbufs, span);

	/* A PSP on a conn_qual the provider picks. */
	DAT_EVD_HANDLE cr_evd;
	DAT_PSP_HANDLE psp;
	DAT_CONN_QUAL q = 0;
	CHECK(dat_evd_create(c.ia, 4, DAT_HANDLE_NULL, DAT_EVD_CR_FLAG, &cr_evd));
	CHECK(dat_psp_create_any(c.ia, &q, cr_evd, DAT_PSP_CONSUMER_FLAG, &psp));
	DAT_PSP_PARAM pp;
	CHECK(dat_psp_query(psp, DAT_PSP_FIELD_ALL, &pp));
	expect(pp.conn_qual == q && pp.evd_handle == cr_evd, "dat_psp_query reports the picked conn_qual");
	printf("rmr_and_reject server: listening on conn_qual %llu\n", (unsigned long long)q);
	fflush(stdout);

	/* The first request is rejected with private data. */
	wait_event(cr_evd, DAT_CONNECTION_REQUEST_EVENT, &ev, "the first request");
	DAT_CR_HANDLE cr = ev.event_data.cr_arrival_event_data.cr_handle;
	DAT_CR_PARAM crp;
	CHECK(dat_cr_query(cr, DAT_CR_FIELD_ALL, &crp));
	expect(crp.private_data_size >= 5 && memcmp(crp.private_data, "first", 5) == 0,
	       "the first request carries \"first\"");
	CHECK(dat_cr_reject(cr, (DAT_COUNT)sizeof reject_data - 1, (DAT_PVOID)reject_data));
	printf("rmr_and_reject server: rejected the first request with %d bytes of private data\n",
	       (int)sizeof reject_data - 1);

	/* The second is accepted. */
	wait_event(cr_evd, DAT_CONNECTION_REQUEST_EVENT, &ev, "the second request");
	CHECK(dat_cr_accept(ev.event_data.cr_arrival_event_data.cr_handle, c.ep, 0, NULL));
	wait_event(c.conn, DAT_CONNECTION_EVENT_ESTABLISHED, &ev, "ESTABLISHED");

	/* An RMR over [WINDOW_OFFSET, +WINDOW_LEN), remote write only. */
	DAT_RMR_HANDLE rmr;
	CHECK(dat_rmr_create(c.pz, &rmr));
	DAT_LMR_TRIPLET range = iov(&c, WINDOW_OFFSET, WINDOW_LEN);
	DAT_RMR_COOKIE bind_cookie = {.as_64 = 77};
	DAT_RMR_CONTEXT ctx = 0;
	CHECK(dat_rmr_bind(rmr, c.lmr, &range, DAT_MEM_PRIV_REMOTE_WRITE_FLAG, DAT_VA_TYPE_VA, c.ep, bind_cookie,
			   DAT_COMPLETION_DEFAULT_FLAG, &ctx));
	wait_event(c.req, DAT_RMR_BIND_COMPLETION_EVENT, &ev, "the bind's completion");
	DAT_RMR_BIND_COMPLETION_EVENT_DATA *b = &ev.event_data.rmr_completion_event_data;
	expect(b->rmr_handle == rmr && b->user_cookie.as_64 == 77 && b->status == DAT_RMR_BIND_SUCCESS,
	       "the bind completed for our RMR, with our cookie");
	DAT_RMR_PARAM rp;
	CHECK(dat_rmr_query(rmr, DAT_RMR_FIELD_ALL, &rp));
	expect(rp.rmr_context == ctx && rp.lmr_triplet.virtual_address == range.virtual_address &&
	       rp.lmr_triplet.segment_length == WINDOW_LEN && rp.mem_priv == DAT_MEM_PRIV_REMOTE_WRITE_FLAG &&
	       rp.pz_handle == c.pz,
	       "dat_rmr_query reports the binding");
	printf("rmr_and_reject server: rmr bound: rmr_context 0x%x (the LMR's own: 0x%x)\n", ctx, c.lmr_rctx);
	refused("lmr_free while an RMR is bound in it", dat_lmr_free(c.lmr));

	/* Tell the client where to write. */
	struct window *w = (struct window *)(c.buf + 128);
	w->va = range.virtual_address + WRITE_OFFSET;
	w->len = WRITE_LEN;
	w->context = ctx;
	DAT_LMR_TRIPLET tx = iov(&c, 128, sizeof *w);
	DAT_DTO_COOKIE ktx = {.as_64 = 200};
	CHECK(dat_ep_post_send(c.ep, 1, &tx, ktx, DAT_COMPLETION_DEFAULT_FLAG));
	wait_dto(c.req, 200, "the window's send");

	/* The client's "hello" then its "done": by then its write has landed. */
	wait_dto(c.recv, 100, "the client's first message");
	wait_dto(c.recv, 101, "the client's \"done\"");
	expect(memcmp(c.buf + 64, "done", 5) == 0, "the client said done");
	for (int i = 0; i < WRITE_LEN; i++)
		if ((unsigned char)c.buf[WINDOW_OFFSET + WRITE_OFFSET + i] != pattern(i))
			expect(0, "the client's RDMA write landed in the window");
	printf("rmr_and_reject server: the client's RDMA write of %d bytes landed through the RMR\n", WRITE_LEN);
	CHECK(dat_ep_recv_query(c.ep, &nbufs, &span));
	printf("rmr_and_reject server: ep_recv_query after both messages: %d buffers, span %d\n", nbufs, span);

	CHECK(dat_rmr_free(rmr));
	refused("rmr_query after rmr_free", dat_rmr_query(rmr, DAT_RMR_FIELD_ALL, &rp));

	wait_event(c.conn, DAT_CONNECTION_EVENT_DISCONNECTED, &ev, "DISCONNECTED");
	CHECK(dat_psp_free(psp));
	CHECK(dat_evd_free(cr_evd));
	teardown(&c);
	printf("rmr_and_reject server: PASSED\n");
}

static void client(char *name, const char *server_ip, DAT_CONN_QUAL q)
{
	struct common c;
	DAT_EVENT ev;
	setup(name, &c);
	struct addrinfo *target;
	expect(getaddrinfo(server_ip, NULL, NULL, &target) == 0, "the server address resolves");

	/* Rejected, with the server's private data. */
	CHECK(dat_ep_connect(c.ep, (DAT_IA_ADDRESS_PTR)target->ai_addr, q, WAIT_US, 5, "first", 0,
			     DAT_CONNECT_DEFAULT_FLAG));
	wait_event(c.conn, DAT_CONNECTION_EVENT_PEER_REJECTED, &ev, "PEER_REJECTED");
	DAT_CONNECTION_EVENT_DATA *cd = &ev.event_data.connect_event_data;
	expect(cd->ep_handle == c.ep, "PEER_REJECTED names our endpoint");
	printf("rmr_and_reject client: PEER_REJECTED with %d bytes of private data: %.*s\n",
	       cd->private_data_size, cd->private_data_size, (const char *)cd->private_data);
	expect(cd->private_data_size == (DAT_COUNT)sizeof reject_data - 1 &&
	       memcmp(cd->private_data, reject_data, sizeof reject_data - 1) == 0,
	       "PEER_REJECTED carries the server's private data");

	/* Again, from the start, with a receive for the window. */
	CHECK(dat_ep_reset(c.ep));
	DAT_LMR_TRIPLET rx = iov(&c, 0, sizeof(struct window));
	DAT_DTO_COOKIE krx = {.as_64 = 1};
	CHECK(dat_ep_post_recv(c.ep, 1, &rx, krx, DAT_COMPLETION_DEFAULT_FLAG));
	CHECK(dat_ep_connect(c.ep, (DAT_IA_ADDRESS_PTR)target->ai_addr, q, WAIT_US, 0, NULL, 0,
			     DAT_CONNECT_DEFAULT_FLAG));
	freeaddrinfo(target);
	wait_event(c.conn, DAT_CONNECTION_EVENT_ESTABLISHED, &ev, "ESTABLISHED");

	wait_dto(c.recv, 1, "the window");
	struct window w;
	memcpy(&w, c.buf, sizeof w);
	expect(w.len == WRITE_LEN, "the window's length");

	/* A message first (so the server's first receive is used), then the write, then "done". */
	strcpy(c.buf + 256, "hello");
	DAT_LMR_TRIPLET hello = iov(&c, 256, 6);
	DAT_DTO_COOKIE k2 = {.as_64 = 2}, k3 = {.as_64 = 3}, k4 = {.as_64 = 4};
	CHECK(dat_ep_post_send(c.ep, 1, &hello, k2, DAT_COMPLETION_DEFAULT_FLAG));
	wait_dto(c.req, 2, "the hello's send");
	for (int i = 0; i < WRITE_LEN; i++)
		c.buf[512 + i] = (char)pattern(i);
	DAT_LMR_TRIPLET src = iov(&c, 512, WRITE_LEN);
	DAT_RMR_TRIPLET dst = {.rmr_context = w.context, .virtual_address = w.va, .segment_length = w.len};
	CHECK(dat_ep_post_rdma_write(c.ep, 1, &src, k3, &dst, DAT_COMPLETION_DEFAULT_FLAG));
	wait_dto(c.req, 3, "the RDMA write");
	printf("rmr_and_reject client: wrote %d bytes through rmr_context 0x%x\n", WRITE_LEN, w.context);
	strcpy(c.buf + 768, "done");
	DAT_LMR_TRIPLET done = iov(&c, 768, 5);
	CHECK(dat_ep_post_send(c.ep, 1, &done, k4, DAT_COMPLETION_DEFAULT_FLAG));
	wait_dto(c.req, 4, "the done's send");

	CHECK(dat_ep_disconnect(c.ep, DAT_CLOSE_ABRUPT_FLAG));
	wait_event(c.conn, DAT_CONNECTION_EVENT_DISCONNECTED, &ev, "DISCONNECTED");
	teardown(&c);
	printf("rmr_and_reject client: PASSED\n");
}

int main(int argc, char **argv)
{
	char *name = "ferro0";
	const char *server_ip = NULL;
	unsigned long long q = 0;
	int is_server = 0, ch;
	while ((ch = getopt(argc, argv, "sc:q:P:")) != -1) {
		switch (ch) {
		case 's': is_server = 1; break;
		case 'c': server_ip = optarg; break;
		case 'q': q = strtoull(optarg, NULL, 10); break;
		case 'P': name = optarg; break;
		default: goto usage;
		}
	}
	if (is_server == (server_ip != NULL) || (server_ip != NULL && q == 0))
		goto usage;
	side = is_server ? "server" : "client";
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (is_server)
		server(name);
	else
		client(name, server_ip, (DAT_CONN_QUAL)q);
	return 0;
usage:
	fprintf(stderr, "usage: rmr_and_reject -s | -c server_ip -q conn_qual  [-P ia_name]\n");
	return 2;
}
