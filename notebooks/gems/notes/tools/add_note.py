async def handle(input, ctx):
    notes = ctx.data.collection("notes")
    doc = {"title": input["title"], "status": "open", "priority": input.get("priority", 3),
           "tags": input.get("tags", [])}
    return await notes.insert(doc)
