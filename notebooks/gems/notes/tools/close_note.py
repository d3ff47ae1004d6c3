async def handle(input, ctx):
    notes = ctx.data.collection("notes")
    if await notes.get(input["id"]) is None:
        return {"ok": False, "reason": f"no note {input['id']}"}
    await notes.update(input["id"], {"status": "done"})
    await ctx.storage.sql.execute("INSERT INTO closed(note_id) VALUES (?)", [input["id"]])
    return {"ok": True}
