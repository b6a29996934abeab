"""What a fresh process needs of torch's insides.

- `global_state`: the switches a call runs under (Dynamo's GLOBAL_STATE), read here and set again
  in the fresh process;
- `preload`: what a fork server imports before it forks, step by step, and whether it may fork.

Importing this package imports neither.
"""
