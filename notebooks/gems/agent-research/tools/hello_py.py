async def handle(input, ctx):
    return { 'ok': True }
