# Models of `npm run bench:predict` (scripts/bench-predict.mjs): Hugging Face configs with random weights,
# nothing downloaded. Written as a user would for a GPU; `memhint predict` runs them on meta tensors.
import torch


def llama_7b(batch=1, seq=2048, layers=32):
    """Llama-2-7B's shape (4096 hidden, 11008 MLP, 32 heads, 32 layers, 32000 vocab): 6.74e9 parameters."""
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(hidden_size=4096, intermediate_size=11008, num_attention_heads=32, num_key_value_heads=32,
                         num_hidden_layers=layers, vocab_size=32000, max_position_embeddings=4096)
    model = LlamaForCausalLM(config).cuda()
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-5)
    ids = torch.randint(0, 32000, (batch, seq), device="cuda")
    return model, opt, ids


def gpt2_124m(batch=8, seq=1024):
    """GPT-2 small (124M parameters), the default GPT2Config."""
    from transformers import GPT2Config, GPT2LMHeadModel

    model = GPT2LMHeadModel(GPT2Config()).cuda()
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
    ids = torch.randint(0, 50257, (batch, seq), device="cuda")
    return model, opt, ids


def train_step(model, opt, ids):
    loss = model(input_ids=ids, labels=ids).loss
    loss.backward()
    opt.step()
    opt.zero_grad(set_to_none=True)
    return loss.item()
