"""A compacted thread: its created time, origin and events (each exactly as stored) in one
zlib blob, compressed with a preset dictionary of what events look like.

Small JSON documents barely compress on their own (zlib has seen nothing yet when a thread's
first field names go by); the dictionary gives it the field names, event types and the usual
values up front, which is most of what a short thread is made of. Format: `z1` then the zlib
stream of "created\\norigin\\nevent\\nevent...": stored JSON never holds a raw newline.

Never change DICTIONARY or the `z1` format: blobs already stored are read with them. A new
dictionary gets a new prefix (`z2`), and `unpack` keeps reading every older one.
"""

from __future__ import annotations

import zlib

# Typical stored text, the most frequent last (zlib reaches back 32 KB; nearer is cheaper).
DICTIONARY = (
    b'{"channel":"slack","slack_channel":"C0","slack_thread_ts":"1700000000.000000"}'
    b'{"channel":"email","email_from":"","email_subject":"","email_root":"<@>"}'
    b'{"channel":"api","forked_from":"","forked_at":1,"notify":["slack:","email:"]}'
    b'"type":"approval_reminded","approval_id":"","count":1}'
    b'"type":"approval_escalated","approval_id":"","to":[""]}'
    b'"type":"approval_expired","approval_id":"","step_id":"","expires_at":"'
    b'"type":"deploy_queued","step_id":"","position":1,"behind":""}'
    b'"type":"delivery_failed","channel":"","to":"","reason":""}'
    b'"type":"cancelled","user":"","reason":"","person":null,"via":"","evidence":""}'
    b'"type":"lock_environment","environment":"","reason":"","service":"","source":"command"}'
    b'"type":"unlock_environment","environment":"","service":"","source":"command"}'
    b'"type":"command_result","step_id":"","ok":true,"text":""}'
    b'"type":"request_more_information","message":"","source":"llm"}'
    b'"type":"error","kind":"internal","message":"","step_id":null}'
    b'"type":"deploy_result","step_id":"","deploy_id":"","service":"backend","tag":"v","environment":"production",'
    b'"commit":"","ok":true,"exit_code":0,"output":"dry run: nothing was changed; set DEPLOY_COMMAND to deploy for '
    b'real\\n","approved_by":"","url":"","rollback_of":null,"force":null,"forced_by":null}'
    b'"type":"deploy_started","step_id":"","deploy_id":"","commit":""}'
    b'"type":"approval_requested","approval_id":"","step_id":"","thread_id":"","args_hash":"","service":"backend",'
    b'"tag":"v","commit":"","environment":"production","requested_by":"","requesters":[""],"reason":null,'
    b'"expires_at":"","change":{"from_tag":"v","from_commit":"","to_commit":"","ahead":1,"behind":0,'
    b'"commits":[{"sha":"","subject":"","author":""}],"unknown":""},"required":1,"rollback_of":null,'
    b'"force":null,"forced_by":null}'
    b'"type":"list_git_tags_result","step_id":"","tags":[{"name":"v1.0.0","commit":"","date":"2026-"}],'
    b'"service":"backend"}'
    b'"type":"deploy","tag":"v","environment":"staging","reason":null,"source":"llm","service":"backend",'
    b'"rollback_of":null,"rollback_from":"","force":null,"forced_by":null}'
    b'"type":"list_git_tags","service":null,"source":"llm"}'
    b'"type":"done_for_now","message":"Deployed backend v to production.","source":"llm"}'
    b'"type":"human_response","text":"approved","user":"","channel":"slack","approval_id":"","approve":true,'
    b'"person":"","via":"slack","evidence":""}'
    b'"type":"user_message","text":"deploy backend v to production","user":"","channel":"api","person":null,'
    b'"via":"name","evidence":""}'
    b'{"id":"","at":"2026-01-01T00:00:00.000000Z","type":"'
)
PREFIX = b"z1"


def pack(created: str, origin: str, events: list[str]) -> bytes:
    text = "\n".join([created, origin, *events]).encode()
    compressor = zlib.compressobj(9, zlib.DEFLATED, 15, 9, zlib.Z_DEFAULT_STRATEGY, DICTIONARY)
    return PREFIX + compressor.compress(text) + compressor.flush()


def unpack(blob: bytes) -> tuple[str, str, list[str]]:
    """(created, origin JSON, events as stored)."""
    if not blob.startswith(PREFIX):
        raise ValueError(f"not a packed thread (starts {blob[:2]!r})")
    decompressor = zlib.decompressobj(15, DICTIONARY)
    text = (decompressor.decompress(blob[len(PREFIX):]) + decompressor.flush()).decode()
    created, origin, *events = text.split("\n")
    return created, origin, events
