"""Defining tools: ``define_tool`` and ``@tool``, schemas and their ``$ref``s, ask-or-assume rules,
gates, tools that ask a person, tool providers, sessions, identity and errors.

Imports: ``trackway.engine`` only.
"""
