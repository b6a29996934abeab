"""What the program file needs of torch's insides.

- `aot_meta`: AOTAutograd's view-and-mutation metadata, read from its trace record (pure text);
- `runtime`, `runtime_guards`, `runtime_graphs`, `runtime_module`: the helpers every program
  file carries, as source copied into it in that order (the plugin imports `frame_locals`);
- `template_load`: the file's `load`, `Program` and script entry point, copied likewise;
- `trap`: torch.compile and Dynamo's frame conversion made to raise, in the process that runs a file.

Importing this package imports none of them.
"""
