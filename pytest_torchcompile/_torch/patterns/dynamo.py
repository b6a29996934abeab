"""Names Dynamo generates, and its graph-break records: their one home.

Dynamo names what it installs after a prefix and a process-global counter
(`__compiled_fn_7`, `__resume_at_30_4`, `__builtins_dict___2`), or after an
object's `id` (`___module_collections_140256468386496_c0`). The prefixes are
spelled once here; every pattern that reads such a name is built from them.
The snapshot wing renumbers them (normalization), the transformed code's
listing pads them, and the program file tells them apart from the user's
globals.
"""

import re

# --- the prefixes ---------------------------------------------------------------

COMPILED_FN_PREFIX = "__compiled_fn"
RESUME_PREFIX = "__resume_at"
BUILTINS_DICT_PREFIX = "__builtins_dict___"
IMPORT_PREFIX = "__import_"
MODULE_PREFIX = "___module_"
#: `___unnamed_scope_1402..._c0`: the globals dict of an inlined function that has no module (no
#: `__name__` in its globals: an FX GraphModule's generated `forward`, code a library `exec`s)
UNNAMED_SCOPE_PREFIX = "___unnamed_scope_"

# --- names, as they stand in printed text ------------------------------------------

#: `__compiled_fn_7_595f6bce_...`: a compiled graph, by a counter and a uuid
COMPILED_FN = re.compile(
    rf"{COMPILED_FN_PREFIX}_\d+(?:_[0-9a-f]{{8}}_[0-9a-f]{{4}}_[0-9a-f]{{4}}_[0-9a-f]{{4}}_[0-9a-f]{{12}})?"
)
#: `__builtins_dict___20`: the builtins dict of a globals scope
BUILTINS_DICT = re.compile(rf"{BUILTINS_DICT_PREFIX}\d+")
#: `__resume_at_60_4`: a resume function, by bytecode offset and counter
RESUME_FN = re.compile(rf"{RESUME_PREFIX}_\d+_\d+")
#: `torch_dynamo_resume_in_f_at_13`: a resume frame's name, by source line
RESUME_IN_AT = re.compile(r"(resume_in_\w+?_at_)\d+\b")
#: `__temp_35`: a temporary of the transformed bytecode
TEMP = re.compile(r"__temp_\d+")
#: `___module_collections_140256468386496_c0`, `G['_140256443150752_c2']`: a global Dynamo
#: installs, named after `id(value)` and a compile counter (`___check_metadata_<id>_c0/0` too)
GLOBAL_WITH_ID = re.compile(r"(?<=[A-Za-z_'])_\d{6,}_c\d+(?:/\d+)*(?![\w/])")

# --- names, one whole name at a time (a code object's names, a module's globals) ----

#: `__compiled_fn_7_...`, `__builtins_dict___2`, `__resume_at_30_4`: counted by a process-global counter.
COUNTED_NAME = re.compile(
    rf"^(?:({COMPILED_FN_PREFIX}_|{BUILTINS_DICT_PREFIX})(\d+)|({RESUME_PREFIX}_)(\d+)_(\d+))(?=_|$)"
)
#: names in transformed code that call a compiled graph or a resume function.
COMPILED_CALL = re.compile(rf"^({COMPILED_FN_PREFIX}_\w+|{RESUME_PREFIX}_\w+)$")
#: globals Dynamo installs in a compiled frame's module (graphs, resume functions, module and builtins aliases).
#: (`_140256443150752_c2`: an object Dynamo refers to by id, suffixed with the compile counter;
#: `___unnamed_scope_140256443150752_c0`: the globals of code made at run time, a namedtuple's `__new__`)
INSTALLED_GLOBAL = re.compile(
    rf"^(?:(?:{COMPILED_FN_PREFIX}_|{RESUME_PREFIX}_|{IMPORT_PREFIX}|{MODULE_PREFIX}|{UNNAMED_SCOPE_PREFIX}|{BUILTINS_DICT_PREFIX})\w*|_\d+_c\d+)$"
)
#: the alias Dynamo's transformed code reads its utils module by, the module, and the helpers of it that
#: the program file has stand-ins for (`DynamoUtils` in `program/runtime_graphs.py`).
DYNAMO_UTILS_ALIAS, DYNAMO_UTILS_MODULE = (
    f"{IMPORT_PREFIX}torch_dot__dynamo_dot_utils",
    "torch._dynamo.utils",
)
DYNAMO_UTILS_HELPERS = frozenset(
    {
        "call_size",
        "call_stride",
        "call_storage_offset",
        "record_pregraph_bytecode_enter",
        "record_pregraph_bytecode_exit",
        "object_setattr_ignore_descriptor",
        "to_numpy_helper",
        "numpy_to_tensor",
        "make_cell",
    }
)
#: every Dynamo module transformed code reads by an installed alias, with the helpers of it the
#: program file has stand-ins for (`program/runtime.py`): alias -> (module, helpers)
DYNAMO_STAND_INS = {
    DYNAMO_UTILS_ALIAS: (DYNAMO_UTILS_MODULE, DYNAMO_UTILS_HELPERS),
    # a function made in the frame and alive after a graph break, made again (`DynamoFunctions`)
    f"{IMPORT_PREFIX}torch_dot__dynamo_dot_variables_dot_functions": (
        "torch._dynamo.variables.functions",
        frozenset({"_create_nested_fn"}),
    ),
}

# --- graph-break records -----------------------------------------------------------

BREAK_AT = re.compile(r"Graph break in user code at (\S+)")
BREAK_REASON = re.compile(r"Graph Break Reason: ([^\n]*)")
#: the traceback a graph-break record ends with (through the caller's frames)
USER_TRACEBACK = re.compile(
    r"^User code traceback:[ \t]*\n(?:[ \t][^\n]*(?:\n|\Z)|\n)*?(?=\S|\Z)", re.MULTILINE
)
#: the `NoneType: None` a graph-break record prints for a missing exception
NONE_TRACE = re.compile(r"^NoneType: None[ \t]*(?:\n|\Z)", re.MULTILINE)

# --- graph input names --------------------------------------------------------------

#: what Dynamo replaces in a source's name to name the graph input it reads (`L['x']` -> `L_x_`)
_NOT_IN_A_NAME = re.compile(r"[^a-zA-Z0-9]+")
#: a graph input or node named after a local or a global: `L_x_`, `G_scale_`,
#: `L_self_modules_fc1_parameters_weight_`
LOCAL_INPUT = re.compile(r"(?<![\w.])[LG]_\w+")


def local_input_prefix(name: str, scope: str = "L") -> str:
    """How the names of the graph inputs Dynamo reads from local (`scope` L) or global (G)
    `name` start: `x` -> `L_x_`."""
    return _NOT_IN_A_NAME.sub("_", f"{scope}['{name}']")
