/*
 * hello_dat: a minimal DAT 2.0 client and server over any provider libdat2 can load.
 *
 *   server: hello_dat -s [-P ia_name]
 *   client: hello_dat -c server_ip [-P ia_name]
 *
 * The client connects with private data "hello?", the server accepts with "yes!"; the
 * client SENDs a message, the server answers with another; the client disconnects. Each
 * side then checks a few things every DAT consumer relies on (a bare DAT_QUEUE_EMPTY from
 * an empty EVD, DAT_INVALID_HANDLE for freed and wrong-type handles, the consumer context),
 * closes, and opens and closes its IA once more (libdat2 unloads and reloads the provider
 * in between). Each prints "hello_dat <side>: PASSED" at the end, or the failing step.
 *
 * Build: cc -o hello_dat hello_dat.c -ldat2   (headers from libdapl-dev: /usr/include/dat2)
 * Run with DAT_OVERRIDE naming a dat.conf whose entry is the IA name (default
 * ferro-softhca0, the entry `ferrodat conf` writes for softhca0).
 */
#include <arpa/inet.h>
#include <dat2/udat.h>
#include <netdb.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CONN_QUAL 47113
#define BUF_SIZE 64
#define WAIT_US (30 * 1000 * 1000)

static const char *side = "?";

static void fail(const char *step, DAT_RETURN r)
{
	const char *major = "", *minor = "";
	dat_strerror(r, &major, &minor);
	printf("hello_dat %s: FAILED at %s: 0x%x %s %s\n", side, step, r, major, minor);
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
		printf("hello_dat %s: FAILED: %s\n", side, what);
		exit(1);
	}
}

/* Waits for one event of `number` on `evd`. */
static void wait_event(DAT_EVD_HANDLE evd, DAT_EVENT_NUMBER number, DAT_EVENT *ev, const char *what)
{
	DAT_COUNT more;
	CHECK(dat_evd_wait(evd, WAIT_US, 1, ev, &more));
	if (ev->event_number != number) {
		printf("hello_dat %s: FAILED waiting for %s: event 0x%x\n", side, what, ev->event_number);
		exit(1);
	}
}

static void wait_dto(DAT_EVD_HANDLE evd, DAT_UINT64 cookie, DAT_COUNT len, const char *what)
{
	DAT_EVENT ev;
	wait_event(evd, DAT_DTO_COMPLETION_EVENT, &ev, what);
	DAT_DTO_COMPLETION_EVENT_DATA *d = &ev.event_data.dto_completion_event_data;
	if (d->status != DAT_DTO_SUCCESS || d->user_cookie.as_64 != cookie ||
	    (DAT_COUNT)d->transfered_length != len) {
		printf("hello_dat %s: FAILED at %s: status %d cookie %llu length %u\n", side, what,
		       d->status, (unsigned long long)d->user_cookie.as_64, d->transfered_length);
		exit(1);
	}
}

/* What any consumer may rely on, checked on live objects of this IA. */
static void check_rules(DAT_IA_HANDLE ia, DAT_PZ_HANDLE pz, DAT_EVD_HANDLE dto, DAT_EP_HANDLE ep)
{
	DAT_EVENT ev;
	DAT_RETURN r = dat_evd_dequeue(dto, &ev);
	expect(r == DAT_QUEUE_EMPTY, "dat_evd_dequeue on an empty EVD returns a bare DAT_QUEUE_EMPTY");

	DAT_HANDLE_TYPE type;
	CHECK(dat_get_handle_type(ep, &type));
	expect(type == DAT_HANDLE_TYPE_EP, "dat_get_handle_type says EP");
	DAT_CONTEXT ctx = {.as_64 = 0x1234abcd}, back = {.as_64 = 0};
	CHECK(dat_set_consumer_context(pz, ctx));
	CHECK(dat_get_consumer_context(pz, &back));
	expect(back.as_64 == 0x1234abcd, "the consumer context comes back");

	/* A freed handle and a handle of the wrong type are refused, not followed. */
	static char spare[BUF_SIZE];
	DAT_REGION_DESCRIPTION region = {.for_va = spare};
	DAT_LMR_HANDLE lmr;
	DAT_LMR_CONTEXT lctx;
	DAT_RMR_CONTEXT rctx;
	DAT_VLEN size;
	DAT_VADDR addr;
	CHECK(dat_lmr_create(ia, DAT_MEM_TYPE_VIRTUAL, region, sizeof spare, pz, DAT_MEM_PRIV_ALL_FLAG,
			     DAT_VA_TYPE_VA, &lmr, &lctx, &rctx, &size, &addr));
	expect(addr <= (DAT_VADDR)(uintptr_t)spare && addr + size >= (DAT_VADDR)(uintptr_t)spare + sizeof spare,
	       "the registered region covers the buffer");
	CHECK(dat_lmr_free(lmr));
	r = dat_lmr_free(lmr);
	expect(DAT_GET_TYPE(r) == DAT_INVALID_HANDLE && DAT_GET_SUBTYPE(r) == DAT_INVALID_HANDLE_LMR,
	       "freeing an LMR twice gives DAT_INVALID_HANDLE_LMR");
	DAT_LMR_TRIPLET iov = {.lmr_context = lctx, .virtual_address = addr, .segment_length = 1};
	DAT_DTO_COOKIE cookie = {.as_64 = 9};
	r = dat_ep_post_send((DAT_EP_HANDLE)pz, 1, &iov, cookie, DAT_COMPLETION_DEFAULT_FLAG);
	expect(DAT_GET_TYPE(r) == DAT_INVALID_HANDLE && DAT_GET_SUBTYPE(r) == DAT_INVALID_HANDLE_EP,
	       "posting on a PZ handle gives DAT_INVALID_HANDLE_EP");
	r = dat_ep_post_send(ep, 1, NULL, cookie, DAT_COMPLETION_DEFAULT_FLAG);
	expect(DAT_GET_TYPE(r) == DAT_INVALID_PARAMETER, "a NULL IOV is an invalid parameter");
}

/* Opens and closes the IA once more: libdat2 unloaded the provider at the last close. */
static void reopen(char *name)
{
	DAT_IA_HANDLE ia;
	DAT_EVD_HANDLE async = DAT_HANDLE_NULL;
	DAT_IA_ATTR attr;
	CHECK(dat_ia_open(name, 8, &async, &ia));
	CHECK(dat_ia_query(ia, NULL, DAT_IA_FIELD_ALL, &attr, 0, NULL));
	expect(attr.ia_address_ptr != NULL, "the reopened IA has an address");
	CHECK(dat_ia_close(ia, DAT_CLOSE_GRACEFUL_FLAG));
}

int main(int argc, char **argv)
{
	char *name = "ferro-softhca0";
	const char *server_ip = NULL;
	int server = 0, c;
	while ((c = getopt(argc, argv, "sc:P:")) != -1) {
		switch (c) {
		case 's': server = 1; break;
		case 'c': server_ip = optarg; break;
		case 'P': name = optarg; break;
		default:
			fprintf(stderr, "usage: hello_dat -s | -c server_ip  [-P ia_name]\n");
			return 2;
		}
	}
	if (server == (server_ip != NULL)) {
		fprintf(stderr, "usage: hello_dat -s | -c server_ip  [-P ia_name]\n");
		return 2;
	}
	side = server ? "server" : "client";

	DAT_IA_HANDLE ia;
	DAT_EVD_HANDLE async = DAT_HANDLE_NULL, conn, send_evd, recv_evd, cr_evd = DAT_HANDLE_NULL;
	DAT_PZ_HANDLE pz;
	DAT_EP_HANDLE ep;
	DAT_PSP_HANDLE psp = DAT_HANDLE_NULL;
	CHECK(dat_ia_open(name, 8, &async, &ia));
	expect(async != DAT_HANDLE_NULL, "dat_ia_open created the async EVD");
	DAT_PROVIDER_ATTR pattr;
	CHECK(dat_ia_query(ia, NULL, 0, NULL, DAT_PROVIDER_FIELD_ALL, &pattr));
	expect(pattr.dapl_version_major == 2 && pattr.dapl_version_minor == 0, "DAT version 2.0");
	CHECK(dat_pz_create(ia, &pz));
	CHECK(dat_evd_create(ia, 8, DAT_HANDLE_NULL, DAT_EVD_CONNECTION_FLAG, &conn));
	/* Separate EVDs for sends and receives: the peer's answer may complete before our
	 * send's completion is reported, so one EVD would not give them in a fixed order. */
	CHECK(dat_evd_create(ia, 16, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG, &send_evd));
	CHECK(dat_evd_create(ia, 16, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG, &recv_evd));
	/* NULL attributes: the provider's defaults. */
	CHECK(dat_ep_create(ia, pz, recv_evd, send_evd, conn, NULL, &ep));

	static char buf[2 * BUF_SIZE];
	DAT_REGION_DESCRIPTION region = {.for_va = buf};
	DAT_LMR_HANDLE lmr;
	DAT_LMR_CONTEXT lctx;
	DAT_RMR_CONTEXT rctx;
	CHECK(dat_lmr_create(ia, DAT_MEM_TYPE_VIRTUAL, region, sizeof buf, pz, DAT_MEM_PRIV_LOCAL_WRITE_FLAG,
			     DAT_VA_TYPE_VA, &lmr, &lctx, &rctx, NULL, NULL));
	char *rx = buf, *tx = buf + BUF_SIZE;
	DAT_LMR_TRIPLET rx_iov = {.lmr_context = lctx, .virtual_address = (DAT_VADDR)(uintptr_t)rx,
				  .segment_length = BUF_SIZE};
	DAT_DTO_COOKIE rx_cookie = {.as_64 = 1}, tx_cookie = {.as_64 = 2};
	CHECK(dat_ep_post_recv(ep, 1, &rx_iov, rx_cookie, DAT_COMPLETION_DEFAULT_FLAG));

	DAT_EVENT ev;
	const char *mine = server ? "pong from the server" : "ping from the client";
	const char *theirs = server ? "ping from the client" : "pong from the server";
	if (server) {
		CHECK(dat_evd_create(ia, 4, DAT_HANDLE_NULL, DAT_EVD_CR_FLAG, &cr_evd));
		CHECK(dat_psp_create(ia, CONN_QUAL, cr_evd, DAT_PSP_CONSUMER_FLAG, &psp));
		printf("hello_dat server: listening on %d\n", CONN_QUAL);
		fflush(stdout);
		wait_event(cr_evd, DAT_CONNECTION_REQUEST_EVENT, &ev, "the connection request");
		DAT_CR_ARRIVAL_EVENT_DATA *cr = &ev.event_data.cr_arrival_event_data;
		expect(cr->sp_handle.psp_handle == psp && cr->conn_qual == CONN_QUAL,
		       "the request names our PSP and connection qualifier");
		DAT_CR_PARAM crp;
		CHECK(dat_cr_query(cr->cr_handle, DAT_CR_FIELD_ALL, &crp));
		expect(crp.private_data_size >= 6 && memcmp(crp.private_data, "hello?", 6) == 0,
		       "the request carries the client's private data");
		CHECK(dat_cr_accept(cr->cr_handle, ep, 4, "yes!"));
		wait_event(conn, DAT_CONNECTION_EVENT_ESTABLISHED, &ev, "ESTABLISHED");
	} else {
		struct addrinfo *target;
		expect(getaddrinfo(server_ip, NULL, NULL, &target) == 0, "the server address resolves");
		CHECK(dat_ep_connect(ep, (DAT_IA_ADDRESS_PTR)target->ai_addr, CONN_QUAL, WAIT_US, 6, "hello?", 0,
				     DAT_CONNECT_DEFAULT_FLAG));
		freeaddrinfo(target);
		wait_event(conn, DAT_CONNECTION_EVENT_ESTABLISHED, &ev, "ESTABLISHED");
		DAT_CONNECTION_EVENT_DATA *cd = &ev.event_data.connect_event_data;
		expect(cd->ep_handle == ep && cd->private_data_size >= 4 &&
		       memcmp(cd->private_data, "yes!", 4) == 0,
		       "ESTABLISHED carries the server's private data");
	}
	DAT_EP_PARAM epp;
	CHECK(dat_ep_query(ep, DAT_EP_FIELD_ALL, &epp));
	expect(epp.ep_state == DAT_EP_STATE_CONNECTED && epp.remote_ia_address_ptr != NULL,
	       "dat_ep_query: connected, with the peer's address");

	DAT_LMR_TRIPLET tx_iov = {.lmr_context = lctx, .virtual_address = (DAT_VADDR)(uintptr_t)tx,
				  .segment_length = (DAT_SEG_LENGTH)strlen(mine) + 1};
	strcpy(tx, mine);
	if (!server) {
		CHECK(dat_ep_post_send(ep, 1, &tx_iov, tx_cookie, DAT_COMPLETION_DEFAULT_FLAG));
		wait_dto(send_evd, 2, (DAT_COUNT)strlen(mine) + 1, "the send's completion");
	}
	wait_dto(recv_evd, 1, (DAT_COUNT)strlen(theirs) + 1, "the receive");
	expect(strcmp(rx, theirs) == 0, "the peer's message arrived intact");
	if (server) {
		CHECK(dat_ep_post_send(ep, 1, &tx_iov, tx_cookie, DAT_COMPLETION_DEFAULT_FLAG));
		wait_dto(send_evd, 2, (DAT_COUNT)strlen(mine) + 1, "the send's completion");
	}

	check_rules(ia, pz, recv_evd, ep);

	if (!server)
		CHECK(dat_ep_disconnect(ep, DAT_CLOSE_ABRUPT_FLAG));
	wait_event(conn, DAT_CONNECTION_EVENT_DISCONNECTED, &ev, "DISCONNECTED");

	if (psp)
		CHECK(dat_psp_free(psp));
	CHECK(dat_ep_free(ep));
	CHECK(dat_lmr_free(lmr));
	if (cr_evd)
		CHECK(dat_evd_free(cr_evd));
	CHECK(dat_evd_free(send_evd));
	CHECK(dat_evd_free(recv_evd));
	CHECK(dat_evd_free(conn));
	CHECK(dat_pz_free(pz));
	CHECK(dat_ia_close(ia, DAT_CLOSE_GRACEFUL_FLAG));

	reopen(name);
	printf("hello_dat %s: PASSED\n", side);
	return 0;
}
