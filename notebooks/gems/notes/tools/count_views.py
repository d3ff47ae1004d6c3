def handle(input, ctx):
    views = int(ctx.storage.kv.get("views") or 0) + 1
    ctx.storage.kv.set("views", str(views))  # D4: a read tool must not write storage
    return {"views": views}
