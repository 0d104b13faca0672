// The language-model examples: a llama-family GGUF file (served by `gpulab serve --model PATH`
// or picked from disk) generating text token by token, in the awaitable forms so they run in
// every browser (JSPI or not).

const LLM_LOAD = `import display
from gpulab.models import llm

# A llama-family GGUF file (SmolLM2, TinyLlama, Llama; Q4_0, Q8_0, Q4_K, Q6_K, F16 or F32
# tensors): the one \`gpulab serve --model PATH\` serves to this page, else one you pick from
# your disk. It is read into the page's memory with a progress bar; a file past the page's device
# memory quota is refused, naming the quota, before it is read.
source = await llm.served_model()
if source is None:
    source = await display.pick_file(".gguf", label="Open a GGUF model file")
model = await llm.load_async(source)
print(model)`;

const LLM_GENERATE = `# Text in, tokens out, on this page's backend: the prompt in one GPU submission, then several
# tokens per submission, sampled on the device (a seed gives the same text on every backend).
# on_token prints each token as its submission returns; the stream holds back a character
# split over several tokens until it is complete.
prompt = "Once upon a time"
stream = model.tokenizer.stream()
print(prompt, end="", flush=True)
new = await model.generate_async(model.tokenizer.encode(prompt), max_new_tokens=48,
                                 temperature=0.8, top_k=40, seed=1,
                                 on_token=lambda t: print(stream.push(t), end="", flush=True))
print(stream.flush())
print(f"[{len(new)} new tokens]")`;

/** @type {Array<{id: string, title: string, cells: string[]}>} */
export const LLM_EXAMPLES = [
  { id: 'llm', title: 'A language model (GGUF) writes text', cells: [LLM_LOAD, LLM_GENERATE] },
];
