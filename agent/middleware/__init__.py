"""Middleware: links that admit, rewrite, deny or scrub at each door of a turn (the input,
each tool call before and after it runs, and the answer), every decision recorded."""
