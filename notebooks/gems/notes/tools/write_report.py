async def handle(input, ctx):
    notes = (await ctx.data.collection("notes").find({"where": {"status": "open"},
                                                      "orderBy": "priority"}))["items"]
    lines = ["# Open notes", ""] + [f"- [{n['priority']}] {n['title']}" for n in notes]
    await ctx.files.write("workspace:reports/notes.md", "\n".join(lines) + "\n")
    moved = []
    inbox = "workspace:" + input.get("inbox", "inbox/")
    if await ctx.files.stat(inbox):
        for f in await ctx.files.list(inbox):
            if f["type"] == "file" and f["name"].endswith(".pdf"):
                await ctx.files.move(inbox + f["name"], inbox + "PDF/" + f["name"])
                moved.append(f["name"])
    await ctx.files.write("output/summary.json", f'{{"open": {len(notes)}}}')
    return {"open": len(notes), "moved": moved}
