"""How torch prints code: FX graphs, Inductor's output code, and kernel metadata."""

import re

# --- FX graphs (Dynamo's, AOTAutograd's, post-grad) ---------------------------------

#: `def forward(self, ...)`: where a printed graph's body starts
FX_DEF = re.compile(r"^\s*def forward\(")
#: `arg0_1: "f32[4][1]cpu"`: a parameter of `forward` with its type annotation
FX_PARAM = re.compile(r"(?<![\w.])([A-Za-z_]\w*)\s*:\s*\"([^\"]*)\"")
#: `relu: "f32[4][1]cpu" = torch.ops.aten.relu.default(arg0_1)`: one node
FX_NODE = re.compile(r"^\s+([A-Za-z_]\w*)(?:\s*:\s*\"([^\"]*)\")?\s*=\s*(.+?)\s*$")
#: the name an assignment defines (a node, or a parameter's unpacking)
FX_DEFINED = re.compile(r"^[ \t]+([A-Za-z_]\w*)(?:: \"[^\"\n]*\")? = ", re.MULTILINE)
#: `;  arg0_1 = None`: the frees FX appends to a node's line
FX_DELETIONS = re.compile(r";\s+(?:[A-Za-z_]\w*\s*=\s*)+None\s*$")
#: the same, on every line of a text, before a line's comment (`drop_fx_frees`)
FX_FREES = re.compile(r";  (?:[A-Za-z_]\w* = )+None(?=  #|$)", re.MULTILINE)
#: `torch.ops.aten.relu.default(`: a call of an op overload
FX_TORCH_OP = re.compile(r"^torch\.ops\.(\w+\.\w+(?:\.\w+)?)\(")
#: `# File: /x/model.py:12 in forward, code: return self.lin(x)`: the user line a node came from
FX_PROVENANCE = re.compile(r"^[ \t]+# File: .*\n", re.MULTILINE)
#: `l_x_ = L_x_`: a Dynamo graph's local alias of one of its inputs
FX_INPUT_ALIAS = re.compile(r"^[ \t]+(l_\w+) = (L_\w+)\n", re.MULTILINE)
#: a blank line inside a graph's body (FX separates the code of each source line)
FX_BLANK_LINE = re.compile(r"\n[ \t]*\n(?=[ \t])")
#: `s27`, `u0`, `z3`: a symbolic size (sympy symbol) that torch numbers as it traces
SYMBOL = re.compile(r"\b([suz])\d+\b")
#: `"Sym(s27*s52)"`: the annotation of a symbolic size
SYM_ANNOTATION = re.compile(r'"Sym\([^"\n]*\)"')
#: the `*` or `**` of a product, spaced or not
SPACED_PRODUCT = re.compile(r" ?(\*\*?) ?")
#: `"Sym(2*s50)"`, `"f32[2*s50, 32]..."`: any FX type annotation that can hold sizes
TYPE_ANNOTATION = re.compile(r'"((?:Sym\(|[a-z]\w*\[)[^"\n]*)"')
#: an operator of a sympy size expression, with the blanks around it
SYMPY_OPERATOR = re.compile(r"\s*(\*\*|\*|//|/)\s*")
#: `aten.native_dropout`, `prims.inductor_random`: an op that draws random numbers
RANDOM_OP = re.compile(
    r"\b(?:aten|prims)\.(native_dropout|bernoulli_?|rand|randn|rand_like|randn_like|randint|randint_like|randperm|"
    r"normal_?|uniform_?|exponential_?|geometric_?|cauchy_?|log_normal_?|random_|multinomial|poisson|"
    r"inductor_random|inductor_seeds)\b"
)
#: `# graph id: 1398...`: a graph module's object id (pre-grad graphs)
GRAPH_ID = re.compile(r"(# graph id: )\d+")
#: `<eval_with_key>.97`: the file name FX gives the code of a GraphModule, numbered by a
#: process-global counter (`# File: <eval_with_key>.97:5 in forward` in a graph that inlined one);
#: a GraphModule traced from a function is named after it too (`<eval_with_key>.98 from
#: <eval_with_key>.97:11 in forward`: a copy of an e3nn module, which `copy.deepcopy` and
#: pickling re-trace from the original's generated code; the original is `<eval_with_key>.97`)
FX_EVAL_KEY = re.compile(r"(<eval_with_key>\.)(?:\d+|<N>)(?: from [^\n]+?:\d+ in \w+)?")
#: `torch_geometric.nn.conv.gcn_conv_GCNConv_propagate_0lxvt4o8.py`: a module a library generated
#: into a `tempfile`, named by a dotted module name, `_`, and 8 random characters of tempfile's
GENERATED_MODULE_FILE = re.compile(r"\b((?:[A-Za-z_]\w*\.)+[A-Za-z_]\w*_)[a-z0-9_]{8}(\.py)\b")
#: what every `GENERATED_MODULE_FILE` match holds: a line without it is not searched (that
#: pattern tries each word boundary, and backtracks through every dotted name it meets)
GENERATED_MODULE_TAIL = re.compile(r"_[a-z0-9_]{8}\.py\b")

# --- Inductor's output code --------------------------------------------------------

#: text of Inductor output code that runs on a GPU: Triton kernels, device buffers allocated (every
#: output code defines `empty_strided_cuda`; a CPU one never calls it)
GPU_OUTPUT_CODE = re.compile(
    r"\bimport triton\b|empty_strided_(?:cuda|xpu|mps)\(|device='(?:cuda|xpu|mps)"
)

#: `# AOT ID: ['3_inference']`: a process-global counter and the graph's kind
AOT_ID = re.compile(r"(# AOT ID: \[')\d+(_\w+'\])")
#: `_tensor_constant0 = None  # device(type='cpu') torch.float32 (1, 2) (2, 1) 7f2105b08eb0`: a constant
#: tensor the wrapper is given at load, described by its device, dtype, size, stride and `hash()` (its id)
TENSOR_CONSTANT_HASH = re.compile(
    r"^([A-Za-z_]\w* = None  # device\(.*\)) [0-9a-f]+$", re.MULTILINE
)
#: `# kernel path: /tmp/torchinductor_x/...`: a file in the cache dir
KERNEL_PATH = re.compile(r"(# kernel path: )\S+")
#: `cpp_fused_relu_0 = async_compile.cpp_pybinding(`: a kernel's definition, by name
KERNEL_NAME_DEF = re.compile(r"^(\w+) = async_compile\.\w+\(")
#: `async_compile.cpp_pybinding(['float*', 'const float*'], ...`: a C++ kernel's argument types
KERNEL_ARGUMENT_TYPES = re.compile(r"cpp_pybinding\(\[([^\]\n]*)\]")
#: `arg3_1`, `primals_4`: an AOT graph's input named by its place among Dynamo's graph's inputs
#: (`arg<N>_1` from 0, `primals_<N>` from 1)
AOT_INPUT = re.compile(r"^(?:primals_(\d+)|arg(\d+)_1)$")
#: the `'''` that closes a kernel's source
KERNEL_BODY_END = re.compile(r"^\s*'''")
#: what a kernel's name says of its fusion: the `cpp_fused_` prefix and the `_0` counter
FUSED_NAME = re.compile(r"^(?:cpp|triton_\w+?|cuda|halide)_fused_|_\d+$")
#: a call in the wrapper: an extern kernel, an op, or a generated kernel (`.run(` on a GPU)
WRAPPER_CALL = re.compile(
    r"(?<![\w.])(extern_kernels\.\w+|torch\.ops\.\w+\.\w+(?:\.\w+)?|aten\.\w+(?:\.\w+)?|[A-Za-z_]\w*)(?:\.run)?\("
)
#: `del buf3`, `del arg0_1`: the wrapper freeing buffers and inputs
WRAPPER_FREE = re.compile(r"^\s+del \w+(?:, \w+)*$")
#: `# Topologically Sorted Source Nodes: [...], Original ATen: [...]`: provenance of a wrapper call
WRAPPER_PROVENANCE = re.compile(r"^\s+# Topologically Sorted Source Nodes: ")
#: `call`'s checks of its inputs: the graph's signature in aot_* says the same sizes and strides
INPUT_ASSERT = re.compile(r"^\s+assert_size_stride\(\w+, .*, 'input'\)$")
#: the module's imports
OUTPUT_IMPORT = re.compile(r"^(?:from \S+ import .+|import \S+(?: as \w+)?)$")
#: `aten = torch.ops.aten`, `async_compile = AsyncCompile()`: the module's aliases
OUTPUT_ALIAS = re.compile(r"^\w+ = (?:torch\.[\w.]+|AsyncCompile\(\))$")
#: one-line scaffolding around the kernels and `call`
OUTPUT_BOILERPLATE_LINE = re.compile(
    r"^(?:async_compile\.wait\(globals\(\)\)|del async_compile|class Runner:|runner = Runner\(.*\)|call = runner\.call"
    r"|recursively_apply_fns = runner\.recursively_apply_fns)$"
)
#: the first line of a scaffolding block (the benchmark harness, the `Runner`'s methods)
OUTPUT_BOILERPLATE_BLOCK = re.compile(
    r"^(?:def get_args\(\):|def benchmark_compiled_module\(.*\):|if __name__ == \"__main__\":|    def __init__\(self, partitions\):|    def recursively_apply_fns\(self, fns\):)$"
)
#: lines every C++ kernel of this torch version opens and closes with (integer division checks)
KERNEL_BOILERPLATE = frozenset(
    {
        "#include <torch/csrc/inductor/cpp_prefix.h>",
        "std::atomic<int> inductor_cpu_integer_div_error{0};",
        "inductor_cpu_integer_div_error_flag = &inductor_cpu_integer_div_error;",
        "inductor_cpu_integer_div_error_flag = nullptr;",
        "inductor_cpu_throw_if_integer_div_error(inductor_cpu_integer_div_error);",
    }
)
#: a C++ loop or branch header that opens a block on the next line
CPP_HEADER = re.compile(r"^\s*(?:(?:for|if|while|switch)\s*\(.*\)|else|do)\s*$")

# --- Triton kernels' metadata (GPU) --------------------------------------------------

#: `'backend_hash': '91D1...'`: a hash of the Triton build
BACKEND_HASH = re.compile(r"('backend_hash': ')[0-9A-Fa-f]+(?=')")
#: `DeviceProperties(type='cuda', index=0, multi_processor_count=132, cc=90, ...)`
DEVICE_PROPERTIES = re.compile(r"DeviceProperties\([^()]*\)")
#: a numeric field of `DeviceProperties` other than the device index
DEVICE_PROPERTY_NUMBER = re.compile(r"\b(?!index=)(\w+=)-?\d+\b")
