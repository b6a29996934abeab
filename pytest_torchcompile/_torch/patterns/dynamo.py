"""Names Dynamo generates, numbered by process-global counters, and its graph-break records."""

import re

#: `__compiled_fn_7_595f6bce_...`: a compiled graph, by a counter and a uuid
COMPILED_FN = re.compile(
    r"__compiled_fn_\d+(?:_[0-9a-f]{8}_[0-9a-f]{4}_[0-9a-f]{4}_[0-9a-f]{4}_[0-9a-f]{12})?"
)
#: `__builtins_dict___20`: the builtins dict of a globals scope
BUILTINS_DICT = re.compile(r"__builtins_dict___\d+")
#: `__resume_at_60_4`: a resume function, by bytecode offset and counter
RESUME_FN = re.compile(r"__resume_at_\d+_\d+")
#: `torch_dynamo_resume_in_f_at_13`: a resume frame's name, by source line
RESUME_IN_AT = re.compile(r"(resume_in_\w+?_at_)\d+\b")
#: `__temp_35`: a temporary of the transformed bytecode
TEMP = re.compile(r"__temp_\d+")
#: `___module_collections_140256468386496_c0`, `G['_140256443150752_c2']`: a global Dynamo
#: installs, named after `id(value)` and a compile counter (`___check_metadata_<id>_c0/0` too)
GLOBAL_WITH_ID = re.compile(r"(?<=[A-Za-z_'])_\d{6,}_c\d+(?:/\d+)*(?![\w/])")
#: the traceback a graph-break record ends with (through the caller's frames)
USER_TRACEBACK = re.compile(
    r"^User code traceback:[ \t]*\n(?:[ \t][^\n]*(?:\n|\Z)|\n)*?(?=\S|\Z)", re.MULTILINE
)
#: the `NoneType: None` a graph-break record prints for a missing exception
NONE_TRACE = re.compile(r"^NoneType: None[ \t]*(?:\n|\Z)", re.MULTILINE)
