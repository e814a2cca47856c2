"""The sentence embedder: all-MiniLM-L6-v2 as int8 ONNX, run by onnxruntime with mean pooling.

Texts are embedded one at a time, never batched: with dynamic int8 quantization the activation scale
is computed over the whole batch, so a batched vector differs from the same text embedded alone
(cosine down to 0.977, MODELS.md). One at a time, build time and query time give identical vectors.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from handler.inference.model_files import ModelSpec, read_spec
from handler.ranking.arrays import FloatArray
from handler.ranking.text import normalize


class OnnxEmbedder:
    def __init__(self, model_dir: Path, threads: int = 1, verify: bool = True) -> None:
        import onnxruntime
        from tokenizers import Tokenizer

        self.spec: ModelSpec = read_spec(model_dir, verify=verify)
        tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        # The shipped tokenizer.json pads every input to 128 tokens (MODELS.md): turn padding off.
        tokenizer.no_padding()
        tokenizer.enable_truncation(max_length=self.spec.max_tokens)
        self._tokenizer = tokenizer
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        self._session = onnxruntime.InferenceSession(
            str(model_dir / "model.onnx"), options, providers=["CPUExecutionProvider"]
        )
        self._input_names = {i.name for i in self._session.get_inputs()}

    @property
    def fingerprint(self) -> str:
        return self.spec.fingerprint

    @property
    def dimensions(self) -> int:
        return self.spec.dimensions

    def embed(self, text: str) -> FloatArray:
        encoding = self._tokenizer.encode(normalize(text))
        ids = np.asarray([encoding.ids], dtype=np.int64)
        mask = np.asarray([encoding.attention_mask], dtype=np.int64)
        feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        (hidden,) = self._session.run(["last_hidden_state"], {k: v for k, v in feeds.items() if k in self._input_names})
        pooled = (hidden[0] * mask[0][:, None]).sum(axis=0) / max(int(mask.sum()), 1)
        norm = float(np.linalg.norm(pooled))
        unit: FloatArray = (pooled / norm if norm > 0 else pooled).astype(np.float32)
        return unit
