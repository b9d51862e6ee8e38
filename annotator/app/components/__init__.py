"""Page components: each draws one part of a page from db/ and eval_core/ values."""
