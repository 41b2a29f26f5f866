"""Which Authentication-Results headers count, and which verdicts in them prove a From's
domain: headers laid out as a receiving server hands a mail over (its own on top, whatever
the sender wrote below)."""

from __future__ import annotations

from bot.adapters.channels.email.auth import proven_by

MX = "mx.example.com"  # the receiving server in front of the bot
TRUSTED = frozenset({MX})
ALICE = "alice@example.com"


def proves(*headers: str, sender: str = ALICE) -> bool:
    return proven_by(headers, sender, TRUSTED) is not None


def test_only_the_topmost_trusted_header_counts():
    own = f"{MX}; spf=softfail smtp.mailfrom=evil.example; dkim=none; dmarc=fail (p=none) header.from=example.com"
    forged = f"{MX}; dmarc=pass header.from=example.com"
    assert not proves(own, forged)  # the sender's pass below the server's fail
    assert not proves(f"{MX}; dkim=none", f"{MX}; dkim=pass header.d=example.com")
    # Another server's header above it (an internal hop) changes nothing: the first of ours counts.
    assert not proves("relay.internal; dmarc=pass header.from=example.com", own, forged)
    assert proves("relay.internal; dmarc=fail header.from=example.com", forged, own)
    # Our topmost header that cannot be read is no verdict, and nothing below it is read.
    assert not proves(f"{MX}; dmarc=pass header.from=example.com; " + "x=y; " * 200, forged)
    assert not proves(f"{MX} dmarc=pass ;;; (", forged)


def test_dmarc_must_name_the_from_domain_it_checked():
    assert not proves(f"{MX}; dmarc=pass")
    assert not proves(f"{MX}; dmarc=pass (p=reject)")
    assert not proves(f"{MX}; dmarc=pass header.from=evil.example")
    assert proves(f"{MX}; dmarc=pass header.from=example.com")
    assert proves(f"{MX}; dmarc=pass header.from=Example.COM")
