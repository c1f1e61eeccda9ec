"""The built-in case library, installed as harness.cases.

Each module is one theme and defines CASES, a list of harness.Case; a case id
starts with its module's name (seeds.log1pexp2 lives in seeds.py).
"""
