"""What the artifacts and the program both write as Python: guard checks and values.

- `guards`: Dynamo's guards read from its cache as rows, emitted as Python
  checks, and run on new inputs (`CompileResult.check_guards`);
- `values`: a value as the Python expression that builds it again.

Below both the artifacts and the program: it imports neither.
"""
