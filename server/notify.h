/*
 * server/notify.h - systemd service notifications from the supervisor
 * (Type=notify units): READY=1 once the node serves clients (every shard
 * ready), STATUS= lines as it changes, STOPPING=1 when it begins to
 * stop, and WATCHDOG=1 keep-alives at half the unit's WatchdogSec.
 *
 * Through libsystemd's sd_notify when configure found it; otherwise the
 * same datagram protocol is spoken directly to $NOTIFY_SOCKET. Without
 * $NOTIFY_SOCKET (not started by systemd) every call does nothing.
 * Only the supervisor (the unit's main pid) notifies; children never do.
 * Callers: the supervisor's loop thread.
 */
#ifndef VS_SERVER_NOTIFY_H
#define VS_SERVER_NOTIFY_H

#include <stdint.h>

/* Reads the watchdog interval ($WATCHDOG_USEC for this pid). */
void sup_notify_init(void);
/* READY=1 with a STATUS= line. */
void sup_notify_ready(const char *status);
/* STATUS= line. */
void sup_notify_status(const char *status);
/* STOPPING=1. */
void sup_notify_stopping(void);
/* Sends WATCHDOG=1 when half the interval passed since the last one. */
void sup_notify_tick(uint64_t now_ns);
/* Milliseconds until the next keep-alive is due (INT32_MAX: none). */
int sup_notify_next_ms(uint64_t now_ns);

#endif /* VS_SERVER_NOTIFY_H */
