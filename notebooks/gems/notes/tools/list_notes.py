def handle(input, ctx):
    # a sync tool: ctx methods return their values directly
    notes = ctx.data.collection("notes")
    where = {"status": input["status"]} if "status" in input else None
    page = notes.find({"where": where, "orderBy": "priority", "limit": input.get("limit", 20)})
    return {"notes": page["items"], "total": notes.count(where)}
