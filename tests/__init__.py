"""SpecChat's tests: folders mirror app/ (tests/engine/local/ tests app/engine/local/), with the project-wide checks here."""
