"""Email: requests and replies in over HTTP (raw RFC 822), approvals and updates out by SMTP.

Inbound mail arrives as one raw message per POST, the form inbound-mail services deliver.
Approval emails go to the addresses of each approver the authority lets decide (the directory's
addresses of the people who may approve, and addresses APPROVER_EMAILS lists for nobody; with
approver_must_differ, never whoever asked).
Their replies carry a signed token (plus-addressed Reply-To, with a copy in the body) bound
to the approval, that address and an expiry, because a From header alone proves nothing: a
valid token proves the address, which is its person's (`directory.by(KIND, …)`), so alice's
decision by email is alice's as much as her click in Slack. Without a valid token, mail from
an approver's address is recorded as feedback from an "unverified sender", who is nobody,
never as a decision, and only when the address is also an allowed sender (else it is
ignored). A reply without a token that would decide the pending approval (its sender may
decide it) is refused, whoever it claims to be from. Nothing is read or written for a
stranger's mail, nor for automatic mail (out-of-office replies, bounces), and every header
that becomes a key or a lookup is bounded. Sends run in the background with retries; one
that cannot be built, or keeps failing, is a log line and a delivery_failed event on the
thread.

A new email (or a reply without a token) is its From's person only when proven: the
receiving mail server's topmost Authentication-Results (an authserv-id of
EMAIL_TRUSTED_AUTHSERV_IDS saying DMARC pass for the From domain, or DKIM pass aligned with it:
`auth.proven_by`), for a domain of EMAIL_MAILBOX_AUTHENTICATED_DOMAINS (elsewhere a
verdict proves the domain, not the mailbox). An unproven new request is recorded as an
unverified sender's and waits (`waiting_for_sender`), with no powers, until the person it names
answers "Did you send this?", mailed to their stored address with a confirmation code signed as
such (it never decides an approval, nor confirms in a reply to another thread's mail), or it
expires. One such request waits per claimed sender, who is asked at most once per
CONFIRMATION_EVERY; any other is refused unanswered. An unproven reply is an unverified
sender's.

An approval goes on in each approval email's thread (its Message-ID is derived from the
approval and the address, so nothing is stored for it): reminders and, while it needs more
approvals, progress lines, each with its own approval code so a reply to it decides too; a
note when it expired. An escalation mails each of its people an approval email of their own.
A reply whose genuine approval code lapsed is told the request expired.

One module per job: `endpoint` (the inbound HTTP endpoint and the order of its checks),
`proof` (who sent a mail, and what proves it), `inbound` (a request, a reply, a decision by
approval code), `confirmation` ("Did you send this?"), `notifier` (what is mailed when events
are recorded), `sending` (one mail out, in the background) over `smtp` (the client), `answers`,
`mailbox` (the settings and ports every job reads); and the mail itself: `parse`,
`html`, `auth` (Authentication-Results), `reply` and `reply_rules` (a reply's new text),
`decision` (its words), `tokens` (approval and confirmation codes), `render`; `kind` (its
name, and how its ids, addresses, compare). The names the
composition root uses are importable from here.
"""

from bot.adapters.channels.email.channel import EmailChannel
from bot.adapters.channels.email.kind import KIND, TARGET, normalise_address
from bot.adapters.channels.email.smtp import Smtp

__all__ = ["KIND", "TARGET", "EmailChannel", "Smtp", "normalise_address"]
