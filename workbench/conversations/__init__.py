"""Replaying a recorded conversation's tool calls on a bench (issue 45): `read` parses the
transcript formats, `replay` runs and compares the calls, `case` keeps one as a test under
`tests/conversations/`. `Bench.replay_conversation` and `gem-workbench conversation` use them."""
