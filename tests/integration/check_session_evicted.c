/*
 * tests/integration/check_session_evicted.c - at-most-once across a
 * session eviction, with a real vstreamd (client table of 2 entries) and
 * the C client library.
 *
 * A handle whose session was evicted while its request's reply was lost
 * must never resend the request after re-registering: the client table
 * forgot the client id (a new entry, watermark 0), so the resend would
 * run as new. The library asks GetSessionStatus after every re-register
 * and reports the request as indeterminate (-ESTALE) instead; a resumed
 * session (not evicted) still gets the cached reply. Both paths are
 * checked: vsc_resend_last, and a reply lost on the wire (a fault proxy
 * discards it) while the session is evicted. Also checked:
 * GetSessionStatus itself (created_op, epoch, watermark; H 40 once the
 * session is gone) and that the handle keeps working after -ESTALE.
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/errors.h"
#include "tests/integration/e2e.h"
#include "tests/integration/proxy.h"
#include "tools/client/vsc.h"

static struct vs_node node;

static void
setup(void)
{
    static const char *const extra[] = {"--clients-table-max", "2", NULL};
    ck_assert_int_eq(vs_harness_init(), 0);
    ck_assert_int_eq(vs_node_init(&node), 0);
    e2e_start(&node, 0, extra);
}

static void
teardown(void)
{
    vs_node_cleanup(&node);
}

#define RC(c, expr, want)                                                      \
    do {                                                                       \
        int rc_ = (expr);                                                      \
        ck_assert_msg(rc_ == (want), "%s = %d, want %d (%s)", #expr, rc_,      \
                      (want), vsc_last_error(c));                              \
    } while (0)

static unsigned
count_streams(struct vsc *c, const char *name)
{
    struct vsc_stream *v;
    size_t n;
    unsigned k = 0;
    RC(c, vsc_stream_list(c, &v, &n), 0);
    for (size_t i = 0; i < n; i++) {
        if (strcmp(v[i].name, name) == 0)
            k++;
        vsc_stream_fini(&v[i]);
    }
    free(v);
    return k;
}

START_TEST(test_resumed_session_gets_cached_reply)
{
    struct vsc *a = e2e_login(&node, "iggy", "iggy");
    struct vsc_session_status st;
    RC(a, vsc_session_status(a, &st), 0);
    ck_assert_uint_eq(st.epoch, vsc_session(a));
    ck_assert_uint_eq(st.created_op, st.epoch); /* this Register made it */
    ck_assert_uint_eq(st.watermark, 0);
    uint64_t created = st.created_op;

    RC(a, vsc_stream_create(a, "x", NULL), 0);
    RC(a, vsc_session_status(a, &st), 0);
    ck_assert_uint_eq(st.watermark, 1);

    /* the reply "lost": reconnect, re-register (resumed), resend */
    RC(a, vsc_resend_last(a), 0);
    RC(a, vsc_session_status(a, &st), 0);
    ck_assert_uint_eq(st.created_op, created); /* the same entry */
    ck_assert_uint_gt(st.epoch, created);      /* a new session epoch */
    ck_assert_uint_eq(st.watermark, 1);
    ck_assert_uint_eq(count_streams(a, "x"), 1);
    vsc_destroy(a);
}
END_TEST

START_TEST(test_evicted_session_request_indeterminate)
{
    struct vsc *a = e2e_login(&node, "iggy", "iggy");
    RC(a, vsc_stream_create(a, "x", NULL), 0);

    /* Two more clients fill the table of 2: A's entry (the oldest latest
     * commit) is evicted, with every cached reply of A. */
    struct vsc *b = e2e_login(&node, "iggy", "iggy");
    struct vsc *c = e2e_login(&node, "iggy", "iggy");
    struct vsc_session_status st;
    RC(a, vsc_session_status(a, &st), VS_E_UNAUTHENTICATED);

    /* The reply of "x" lost: the library re-registers (a new entry),
     * sees that the table forgot it and refuses to resend. Without the
     * check the resend ran as new (StreamNameAlreadyExists here, a
     * second execution of anything not idempotent). */
    RC(a, vsc_resend_last(a), -ESTALE);
    ck_assert(strstr(vsc_last_error(a), "outcome is unknown") != NULL);
    ck_assert_uint_eq(count_streams(a, "x"), 1);

    /* the handle goes on in its new session */
    RC(a, vsc_stream_create(a, "y", NULL), 0);
    RC(a, vsc_session_status(a, &st), 0);
    ck_assert_uint_eq(st.created_op, st.epoch);
    ck_assert_uint_eq(count_streams(a, "y"), 1);
    /* and a later resend in it is resumed again: the cached reply */
    RC(a, vsc_resend_last(a), 0);
    ck_assert_uint_eq(count_streams(a, "y"), 1);
    vsc_destroy(c);
    vsc_destroy(b);
    vsc_destroy(a);
}
END_TEST

struct lost_call {
    struct vsc *c;
    int rc;
    char err[512];
};

static void *
create_x(void *arg)
{
    struct lost_call *l = arg;
    l->rc = vsc_stream_create(l->c, "x", NULL);
    snprintf(l->err, sizeof(l->err), "%s", vsc_last_error(l->c));
    return NULL;
}

static int
has_x(struct vsc *c)
{
    struct vsc_stream s;
    int found = 0;
    struct vsc_id id = vsc_id_name("x");
    if (vsc_stream_get(c, &id, &s, &found) == 0 && found) {
        vsc_stream_fini(&s);
        return 1;
    }
    return 0;
}

/* The library's own resend path: the reply of a request is lost on the
 * wire (a proxy discards it), the session is evicted meanwhile, the
 * library times out, reconnects, re-registers and must not resend. */
START_TEST(test_lost_reply_then_evicted_not_resent)
{
    char paddr[32];
    struct vs_proxy *px = vs_proxy_start(node.ready.client, paddr);
    ck_assert_ptr_nonnull(px);
    struct vsc_opts o;
    memset(&o, 0, sizeof(o));
    o.addr = paddr;
    o.io_timeout_ms = 4000;
    o.connect_timeout_ms = 2000;
    struct vsc *a = vsc_create(&o);
    ck_assert_ptr_nonnull(a);
    RC(a, vsc_connect(a), 0);
    RC(a, vsc_login(a, "iggy", "iggy", NULL), 0);
    struct vsc *b = e2e_login(&node, "iggy", "iggy");

    vs_proxy_drop_replies(px, 1);
    struct lost_call l = {.c = a};
    pthread_t t;
    ck_assert_int_eq(pthread_create(&t, NULL, create_x, &l), 0);
    int seen = 0;
    for (int i = 0; i < 200 && !seen; i++) {
        seen = has_x(b);
        if (!seen)
            usleep(10 * 1000);
    }
    ck_assert_msg(seen, "the create never ran");
    /* two logins evict B, then A (whose last commit is older) */
    struct vsc *c = e2e_login(&node, "iggy", "iggy");
    struct vsc *d = e2e_login(&node, "iggy", "iggy");
    vs_proxy_drop_replies(px, 0);
    ck_assert_int_eq(pthread_join(t, NULL), 0);
    ck_assert_msg(l.rc == -ESTALE, "create after the eviction: %d (%s)", l.rc,
                  l.err);
    ck_assert(strstr(l.err, "outcome is unknown") != NULL);
    ck_assert_uint_eq(count_streams(d, "x"), 1);
    vsc_destroy(d);
    vsc_destroy(c);
    vsc_destroy(b);
    vsc_destroy(a);
    vs_proxy_stop(px);
}
END_TEST

static Suite *
evicted_suite(void)
{
    Suite *s = suite_create("session_evicted");
    TCase *t = tcase_create("one_node");
    tcase_add_checked_fixture(t, setup, teardown);
    tcase_set_timeout(t, 60);
    tcase_add_test(t, test_resumed_session_gets_cached_reply);
    tcase_add_test(t, test_evicted_session_request_indeterminate);
    tcase_add_test(t, test_lost_reply_then_evicted_not_resent);
    suite_add_tcase(s, t);
    return s;
}

int
main(void)
{
    SRunner *r = srunner_create(evicted_suite());
    srunner_run_all(r, CK_NORMAL);
    int failed = srunner_ntests_failed(r);
    srunner_free(r);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
