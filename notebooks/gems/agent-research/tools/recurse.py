# Not from the seed: a tool that calls itself through ctx.tools (the recursion A5 stops).
def handle(input, ctx):
    return ctx.tools.recurse({"depth": input.get("depth", 0) + 1})
