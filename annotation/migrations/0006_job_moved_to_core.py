from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ('aggregation', '0003_job_in_core'),
        ('annotation', '0005_job_and_token_leave_for_core'),
        ('judging', '0002_job_in_core'),
    ]

    # The tables keep their names (db_table): the move to core changes the migration state only.
    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.DeleteModel(
                    name='Job',
                ),
            ],
        ),
    ]
