/*
 * Two CQs on one completion channel, armed one right after the other before any
 * completion (as perftest's ib_send_bw -e and ib_send_lat -e arm their send and receive
 * CQs): each must then report its next completion on the channel. Both first arms are
 * sn 0, ci 0: the arm word rdma-core writes to each doorbell record equals the record's
 * initial zero, and the second arm's store to the UAR's CQ doorbell overwrites the
 * first's. Prints "two cqs armed ok" on success; anything else exits non-zero saying
 * which event never came.
 */
#include "rc_loopback.h"
#include <poll.h>

/* The next event of `channel`, waited for at most 5 s; it must be `want`'s. */
static void expect_event(struct ibv_comp_channel *channel, struct ibv_cq *want, const char *name)
{
	struct pollfd p = { .fd = channel->fd, .events = POLLIN };
	int n = poll(&p, 1, 5000);
	if (n < 0)
		FAIL("poll failed");
	if (n == 0)
		FAIL("no completion event for the %s CQ within 5 s: its arm was lost", name);
	struct ibv_cq *cq;
	void *cq_ctx;
	if (ibv_get_cq_event(channel, &cq, &cq_ctx))
		FAIL("ibv_get_cq_event failed");
	if (cq != want)
		FAIL("the event is not the %s CQ's", name);
	ibv_ack_cq_events(cq, 1);
	struct ibv_wc wc = rc_poll_one(cq);
	if (wc.status != IBV_WC_SUCCESS)
		FAIL("%s CQ: %s", name, ibv_wc_status_str(wc.status));
}

int main(void)
{
	union ibv_gid gid;
	struct ibv_context *ctx = rc_open_first(&gid);
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	struct ibv_comp_channel *channel = ibv_create_comp_channel(ctx);
	if (!pd || !channel)
		FAIL("PD or channel failed");
	struct ibv_cq *send_cq = ibv_create_cq(ctx, 16, NULL, channel, 0);
	struct ibv_cq *recv_cq = ibv_create_cq(ctx, 16, NULL, channel, 0);
	if (!send_cq || !recv_cq)
		FAIL("CQ failed");
	static char buf[4096];
	struct ibv_mr *mr = ibv_reg_mr(pd, buf, sizeof buf,
				       IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	if (!mr)
		FAIL("ibv_reg_mr failed");
	/* a sends (completions in send_cq), b receives (completions in recv_cq). */
	struct ibv_qp *a = rc_qp(pd, send_cq, IBV_ACCESS_REMOTE_WRITE);
	struct ibv_qp *b = rc_qp_on(pd, send_cq, recv_cq, IBV_ACCESS_REMOTE_WRITE);
	rc_connect(a, b->qp_num, &gid);
	rc_connect(b, a->qp_num, &gid);

	if (ibv_req_notify_cq(send_cq, 0) || ibv_req_notify_cq(recv_cq, 0))
		FAIL("ibv_req_notify_cq failed");

	rc_write_inline(a, (uintptr_t)buf, mr->rkey, "first");
	expect_event(channel, send_cq, "send");

	struct ibv_sge rsge = { .addr = (uintptr_t)buf + 1024, .length = 64, .lkey = mr->lkey };
	struct ibv_recv_wr rwr = { .wr_id = 7, .sg_list = &rsge, .num_sge = 1 };
	struct ibv_recv_wr *rbad;
	if (ibv_post_recv(b, &rwr, &rbad))
		FAIL("ibv_post_recv failed");
	struct ibv_sge sge = { .addr = (uintptr_t)buf, .length = 16, .lkey = mr->lkey };
	struct ibv_send_wr wr = { .wr_id = 3, .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_SEND };
	struct ibv_send_wr *bad;
	if (ibv_post_send(a, &wr, &bad))
		FAIL("ibv_post_send (SEND) failed");
	expect_event(channel, recv_cq, "receive");

	printf("two cqs armed ok\n");
	return 0;
}
