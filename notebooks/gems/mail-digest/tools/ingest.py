"""Runs on email.onNewMessage: the event carries the envelope only (E6), so read the body."""


def handle(input, ctx):
    full = ctx.email.getMessage({"accountId": input["accountId"], "id": input["id"]})
    ctx.storage.kv.set(f"ingested:{input['accountId']}:{input['id']}", full["subject"])
    return {"subject": full["subject"], "words": len(full["body"].split()),
            "attachments": [a["filename"] for a in full["attachments"]]}
