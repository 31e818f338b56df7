"""The paper's experimental protocol without Prefect: pools, the comparison runs, the θ and
ensemble-size studies, significance tests and the comparison with the paper's Tables."""
